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
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, get_args

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

__all__ = ["DEFAULT_SCOPES", "SCOPES", "ApiKey", "ApiKeyQuerySet", "Scope", "parse_words"]

Scope = Literal["read", "run", "keys"]
"""What a key may do: ``read`` (every GET), ``run`` (start, cancel, retry, decide; ``/v1``),
``keys`` (create and revoke keys)."""
SCOPES: tuple[Scope, ...] = get_args(Scope)
# A new key can read and run, not mint its own successors (a leaked key must stay revocable).
DEFAULT_SCOPES: tuple[Scope, ...] = ("read", "run")

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


def parse_words(value: str | Iterable[str]) -> list[str]:
    """The words of a space- or comma-separated string (or of a list), in order, once each."""
    words = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    return list(dict.fromkeys(word.strip() for word in words if word.strip()))


def validate_scopes(value: str) -> None:
    """``value`` names one scope or more, each one of ``SCOPES``."""
    words = parse_words(value)
    if not words:
        raise ValidationError("Give a key one scope at least.")
    unknown = [word for word in words if word not in SCOPES]
    if unknown:
        raise ValidationError(
            f"Unknown scope {unknown[0]!r}: choose among {', '.join(SCOPES)}.", code="invalid"
        )


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
        self,
        *,
        user: _User,
        name: str,
        expires: datetime | None = None,
        scopes: Iterable[str] = DEFAULT_SCOPES,
        profiles: Iterable[str] | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key for ``user``; return it with the full key, which is never stored.

        ``profiles`` ``None`` lets the key use every profile its user may.

        Raises:
            ValidationError: the name is blank or too long, ``expires`` is not in the future,
                a scope is unknown or none is given, or ``profiles`` is an empty list.
        """
        scope_words = " ".join(parse_words(scopes))
        if not scope_words:
            raise ValidationError({"scopes": "Give a key one scope at least."})
        profile_words = "" if profiles is None else " ".join(parse_words(profiles))
        if profiles is not None and not profile_words:
            raise ValidationError(
                {"profiles": "Name one profile at least, or leave profiles out for all."}
            )
        if expires is not None and expires <= timezone.now():
            raise ValidationError({"expires": "Choose a time in the future."})
        for attempt in range(ISSUE_ATTEMPTS):
            prefix = "".join(secrets.choice(PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
            secret = secrets.token_urlsafe(SECRET_BYTES)
            key = self.model(
                user=user,
                name=name,
                prefix=prefix,
                digest=_digest(secret),
                expires=expires,
                scopes=scope_words,
                profiles=profile_words,
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
    # Words, not JSON: ``find()`` reads the row in raw SQL, where a string needs no decoding.
    scopes = models.CharField(
        "scopes",
        max_length=32,
        default=" ".join(DEFAULT_SCOPES),
        validators=[validate_scopes],
        help_text="Space-separated, among: read (every GET), run (start, cancel, retry, "
        "decide; /v1), keys (create and revoke keys).",
    )
    profiles = models.TextField(
        "profiles",
        blank=True,
        default="",
        help_text="Space-separated profile slugs the key may use. Empty: every profile.",
    )

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

    @property
    def scope_list(self) -> list[Scope]:
        """The key's scopes, in the order of ``SCOPES``."""
        words = set(parse_words(self.scopes))
        return [scope for scope in SCOPES if scope in words]

    @property
    def profile_list(self) -> list[str] | None:
        """The slugs the key may use, or ``None``: every profile."""
        return parse_words(self.profiles) or None

    def allows(self, scope: Scope | str) -> bool:
        """Whether the key holds ``scope``."""
        return scope in self.scope_list

    def allows_profile(self, slug: str) -> bool:
        """Whether the key may use the profile ``slug`` (its user's own access aside)."""
        allowed = self.profile_list
        return allowed is None or slug in allowed

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
