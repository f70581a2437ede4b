"""API keys: how programs authenticate to the REST API as one user.

A key reads ``ork_<prefix>_<secret>``. The prefix is stored in clear, to find the row and to
show which key is which; the secret is stored only as its SHA-256 (a 256-bit random secret
needs no slow hash: there is nothing to brute-force), so the full key is shown once, when it
is issued, and never again.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from orkestrel.statements import Names, Query, prep

if TYPE_CHECKING:
    # django-stubs' placeholder for ``AUTH_USER_MODEL``, which its plugin resolves.
    from django.contrib.auth.models import _User

__all__ = ["ApiKey", "ApiKeyQuerySet"]

SCHEME = "ork"
PREFIX_LENGTH = 8
PREFIX_ALPHABET = string.ascii_lowercase + string.digits
SECRET_BYTES = 32
# ``last_used`` is a hint for people, not an audit log: one write a minute per key at most.
TOUCH_EVERY = timedelta(minutes=1)
# Eight characters from 36 make collisions rare; a few retries make them harmless.
ISSUE_ATTEMPTS = 5


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _split(raw: str) -> tuple[str, str] | None:
    """``(prefix, secret)`` of a well-formed key, else ``None``."""
    scheme, _, rest = raw.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != SCHEME or len(prefix) != PREFIX_LENGTH or not secret:
        return None
    return prefix, secret


def _key_fields() -> tuple[models.Field[Any, Any], ...]:
    return tuple(ApiKey._meta.concrete_fields)


def _user_fields() -> tuple[models.Field[Any, Any], ...]:
    return tuple(get_user_model()._meta.concrete_fields)


def _usable_sql(n: Names) -> str:
    user = get_user_model()
    columns = [n.field(f, "k") for f in _key_fields()]
    columns += [n.field(f, "u") for f in _user_fields()]
    expires = n.column(ApiKey, "expires", "k")
    return (
        f"SELECT {', '.join(columns)} FROM {n.table(ApiKey)} k "
        f"INNER JOIN {n.table(user)} u ON {n.column(ApiKey, 'user', 'k')} = "
        f"{n.column(user, 'id', 'u')} "
        f"WHERE {n.column(ApiKey, 'prefix', 'k')} = %s AND {n.column(ApiKey, 'revoked', 'k')} "
        f"IS NULL AND ({expires} IS NULL OR {expires} > %s) "
        f"AND {n.column(user, 'is_active', 'u')} = %s"
    )


_USABLE = Query(_usable_sql, lambda: (*_key_fields(), *_user_fields()))


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self, now: datetime | None = None) -> ApiKeyQuerySet:
        """Keys that authenticate: not revoked, not expired, of an active user."""
        now = now or timezone.now()
        return self.filter(
            Q(expires__isnull=True) | Q(expires__gt=now),
            revoked__isnull=True,
            user__is_active=True,
        )

    def find(self, raw: str) -> ApiKey | None:
        """The usable key ``raw`` is, or ``None`` (unknown, revoked, expired: all alike)."""
        parts = _split(raw)
        if parts is None:
            return None
        prefix, secret = parts
        # ``usable()`` with the user, in fixed SQL: every API request asks.
        now = timezone.now()
        found = _USABLE.rows([prefix, prep(ApiKey, "expires", now), True])
        if not found:
            return None
        row, split = found[0], len(_key_fields())
        key = ApiKey.from_db(connection.alias, [f.attname for f in _key_fields()], row[:split])
        key.user = get_user_model().from_db(
            connection.alias, [f.attname for f in _user_fields()], row[split:]
        )
        if not hmac.compare_digest(key.digest, _digest(secret)):
            return None
        return key

    def issue(
        self, *, user: _User, name: str, expires: datetime | None = None
    ) -> tuple[ApiKey, str]:
        """Create a key for ``user``; return it with the full key, which is never stored.

        Raises:
            ValidationError: the name is blank or too long, or ``expires`` is not in the future.
        """
        if expires is not None and expires <= timezone.now():
            raise ValidationError({"expires": "Choose a time in the future."})
        for attempt in range(ISSUE_ATTEMPTS):
            prefix = "".join(secrets.choice(PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
            secret = secrets.token_urlsafe(SECRET_BYTES)
            key = self.model(
                user=user, name=name, prefix=prefix, digest=_digest(secret), expires=expires
            )
            key.full_clean(validate_unique=False)
            try:
                with transaction.atomic():
                    key.save(force_insert=True)
            except IntegrityError:
                if attempt == ISSUE_ATTEMPTS - 1:
                    raise
                continue
            return key, f"{SCHEME}_{prefix}_{secret}"
        raise AssertionError("unreachable")

    def revoke(self, now: datetime | None = None) -> int:
        """Revoke the keys not yet revoked (a revoked key keeps its first time); how many."""
        return self.filter(revoked__isnull=True).update(revoked=now or timezone.now())


class ApiKey(models.Model):
    """One named key of a user; listed for ever, usable until revoked or expired."""

    # Not agent configuration: a new key must not invalidate cached profile configurations.
    is_configuration = False

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_keys",
        verbose_name="user",
        db_index=False,  # the (user, created) index leads with it
    )
    name = models.CharField("name", max_length=100)
    prefix = models.CharField("prefix", max_length=PREFIX_LENGTH, unique=True, editable=False)
    digest = models.CharField("SHA-256 of the secret", max_length=64, editable=False)
    created = models.DateTimeField("created", auto_now_add=True)
    last_used = models.DateTimeField("last used", null=True, blank=True, editable=False)
    expires = models.DateTimeField(
        "expires", null=True, blank=True, help_text="Empty: the key never expires."
    )
    revoked = models.DateTimeField("revoked", null=True, blank=True, editable=False)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        verbose_name_plural = "API keys"
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["user", "-created"], name="agents_apikey_user_idx")]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="agents_apikey_name_set"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.display_prefix})"

    @property
    def display_prefix(self) -> str:
        """How the key starts, for people to recognise it: ``ork_<prefix>_…``."""
        return f"{SCHEME}_{self.prefix}_…"

    def status(self, now: datetime | None = None) -> str:
        """``"revoked"``, ``"expired"`` or ``"active"``."""
        if self.revoked is not None:
            return "revoked"
        if self.expires is not None and self.expires <= (now or timezone.now()):
            return "expired"
        return "active"

    def touch(self, now: datetime | None = None) -> None:
        """Record a use, writing only when the last recorded one is a minute old or more."""
        now = now or timezone.now()
        if self.last_used is not None and now - self.last_used < TOUCH_EVERY:
            return
        # Conditional, and ``update()``: concurrent requests write once, and no save signal
        # fires (this is not configuration; see ``agents.signals``).
        ApiKey.objects.filter(
            Q(last_used__isnull=True) | Q(last_used__lte=now - TOUCH_EVERY), pk=self.pk
        ).update(last_used=now)
        self.last_used = now
