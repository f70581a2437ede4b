"""Retention: the kinds of records kept for a while, and the record of each purge.

Each kind is kept ``ORKESTREL["RETENTION_DAYS"][kind]`` days (none or 0: for ever), unless
the profile the record belongs to says otherwise (its ``retain_<kind>_days``: empty follows
the setting, 0 keeps for ever). ``agents.retention`` purges what is past its time; a
``PurgeReport`` is what one purge found (a daily one names the cron occurrence it ran for, and
each occurrence runs once across every process).
"""

from __future__ import annotations

from typing import Literal, get_args

from django.db import models

__all__ = ["RETENTION_KINDS", "PurgeReport", "RetentionKind", "profile_field"]

type RetentionKind = Literal[
    "conversations", "runs", "run_events", "approvals", "decisions", "tool_failures", "jobs"
]
# In the order a purge takes them: a conversation's deletion takes its runs and logs with it.
RETENTION_KINDS: tuple[RetentionKind, ...] = get_args(RetentionKind.__value__)


def profile_field(kind: RetentionKind) -> str:
    """The profile's field overriding the setting for ``kind``."""
    return f"retain_{kind}_days"


class PurgeReport(models.Model):
    """One purge: what it deleted (or, dry, would delete), by kind."""

    class Trigger(models.TextChoices):
        DAILY = "daily", "daily"
        COMMAND = "command", "command"

    trigger = models.CharField("trigger", max_length=16, choices=Trigger.choices)
    occurrence = models.DateTimeField(
        "occurrence",
        null=True,
        blank=True,
        unique=True,
        help_text="The daily cron's moment it ran for: each runs once.",
    )
    dry_run = models.BooleanField("dry run", default=False)
    counts = models.JSONField("counts", default=dict, blank=True, help_text="Rows by kind.")
    started = models.DateTimeField("started", auto_now_add=True)
    finished = models.DateTimeField("finished", null=True, blank=True)

    class Meta:
        verbose_name = "purge report"
        verbose_name_plural = "purge reports"
        ordering = ["-started", "-id"]

    def __str__(self) -> str:
        total = sum(int(n) for n in (self.counts or {}).values())
        return f"purge {self.started:%Y-%m-%d %H:%M} ({total} rows)"
