"""The usage ledger and the quotas kept against it.

``UsageEntry`` is an account, not a view of the conversations: one row per settled run, job
or summary, written with its cost at the prices of the moment, and tied to nothing that a
user deletes (a conversation, a run, a job are named by id only). A revoked or deleted key's
rows keep its id and name (no foreign key). ``Quota`` is an operator's limit on tokens or USD
for a user, a group (its members together) or an API key, per day, week or month, blocking or
warning.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .keys import ApiKey

__all__ = ["COST_DIGITS", "COST_PLACES", "Quota", "UsageEntry"]

# As the conversations' and runs' cost columns: up to a billion dollars, to 1e-10.
COST_DIGITS = 20
COST_PLACES = 10


class UsageEntry(models.Model):
    """What one run, job or summary spent: tokens and USD, charged to a user (and key)."""

    # Not agent configuration: a run's settle must not invalidate cached configurations.
    is_configuration = False

    class Kind(models.TextChoices):
        RUN = "run", "run"
        JOB = "job", "job"
        SUMMARY = "summary", "summary"

    class Outcome(models.TextChoices):
        OK = "ok", "ok"
        ERROR = "error", "error"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="usage_entries",
        verbose_name="user",
        db_index=False,  # the (user, created) index leads with it
    )
    # The key by id and name, no foreign key: a revoked or deleted key's rows still group.
    key_id = models.BigIntegerField("API key id", null=True, blank=True)
    key_name = models.CharField("API key name", max_length=100, blank=True)
    kind = models.CharField("kind", max_length=8, choices=Kind.choices)
    outcome = models.CharField("outcome", max_length=8, choices=Outcome.choices, default="ok")
    profile = models.CharField("profile", max_length=100, blank=True, help_text="Its slug.")
    model = models.CharField("model", max_length=300, blank=True, help_text="<endpoint>/<model>")
    # The run's, job's or conversation's id, for an operator to look it up: no foreign key.
    source = models.CharField("source", max_length=64, blank=True)
    prompt = models.PositiveBigIntegerField("prompt tokens", default=0)
    completion = models.PositiveBigIntegerField("completion tokens", default=0)
    total = models.PositiveBigIntegerField("total tokens", default=0)
    cache_read = models.PositiveBigIntegerField("cache read tokens", default=0)
    cache_write = models.PositiveBigIntegerField("cache write tokens", default=0)
    reasoning = models.PositiveBigIntegerField("reasoning tokens", default=0)
    cost = models.DecimalField(
        "cost (USD)",
        max_digits=COST_DIGITS,
        decimal_places=COST_PLACES,
        null=True,
        blank=True,
        help_text="At the model's prices when recorded; empty: it had none.",
    )
    duration_ms = models.PositiveIntegerField("duration (ms)", null=True, blank=True)
    created = models.DateTimeField("recorded", default=timezone.now)

    class Meta:
        verbose_name = "usage entry"
        verbose_name_plural = "usage ledger"
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["user", "created"], name="agents_usage_user_idx"),
            models.Index(fields=["key_id", "created"], name="agents_usage_key_idx"),
            models.Index(fields=["created"], name="agents_usage_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=("run", "job", "summary")), name="agents_usage_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.source} ({self.total} tokens)"


class Quota(models.Model):
    """A limit on a user's, a group's (its members together) or an API key's usage."""

    # Not agent configuration: a new limit must not invalidate cached profile configurations.
    is_configuration = False

    class Period(models.TextChoices):
        DAY = "day", "day"
        WEEK = "week", "week"
        MONTH = "month", "month"

    class Action(models.TextChoices):
        BLOCK = "block", "block"
        WARN = "warn", "warn"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="quotas",
        verbose_name="user",
    )
    group = models.ForeignKey(
        Group,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="quotas",
        verbose_name="group",
    )
    api_key = models.ForeignKey(
        ApiKey,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="quotas",
        verbose_name="API key",
    )
    period = models.CharField("period", max_length=8, choices=Period.choices, default="month")
    max_tokens = models.PositiveBigIntegerField(
        "token limit", null=True, blank=True, help_text="Empty: tokens are not limited."
    )
    max_cost = models.DecimalField(
        "USD limit",
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Empty: cost is not limited.",
    )
    action = models.CharField(
        "when reached",
        max_length=8,
        choices=Action.choices,
        default="block",
        help_text="block: refuse runs and jobs until it resets; warn: allow them.",
    )

    class Meta:
        verbose_name = "quota"
        verbose_name_plural = "quotas"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(user__isnull=False, group__isnull=True, api_key__isnull=True)
                    | Q(user__isnull=True, group__isnull=False, api_key__isnull=True)
                    | Q(user__isnull=True, group__isnull=True, api_key__isnull=False)
                ),
                name="agents_quota_one_subject",
            ),
            models.CheckConstraint(
                condition=Q(max_tokens__isnull=False) | Q(max_cost__isnull=False),
                name="agents_quota_has_limit",
            ),
            models.CheckConstraint(
                condition=Q(period__in=("day", "week", "month")), name="agents_quota_period_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} per {self.period}: {self.limit_text}"

    @property
    def subject(self) -> str:
        """Who the quota limits, as people read it: ``user alice``, ``group team``..."""
        if self.user_id is not None:
            return f"user {self.user}"
        if self.group_id is not None:
            return f"group {self.group}"
        return f"key {self.api_key}"

    @property
    def limit_text(self) -> str:
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens} tokens")
        if self.max_cost is not None:
            parts.append(f"${self.max_cost}")
        return " and ".join(parts) or "no limit"

    def clean(self) -> None:
        super().clean()
        subjects = [self.user_id, self.group_id, self.api_key_id]
        if sum(value is not None for value in subjects) != 1:
            raise ValidationError("Choose exactly one of user, group or API key.")
        if self.max_tokens is None and self.max_cost is None:
            raise ValidationError({"max_tokens": "Set a token limit, a USD limit, or both."})
