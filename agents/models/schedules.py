"""Schedules: an agent job a user or operator asked to run on a cron, on a webhook, or now.

A ``Schedule`` names a profile, a prompt, a five-field cron expression read in its time zone,
and whether the cron is on. ``next_run`` is when the cron is next due (kept by whoever fires
it: the scheduler moves it with a conditional ``UPDATE``, so of several processes ticking,
one fires each occurrence); ``run_requested`` is an operator's **Run now** from the admin,
which the next tick takes. Each start is a ``ScheduleRun``: the history row that links the
job it started and says what started it.

The webhook secret is never stored: it is derived from ``SECRET_KEY``, the schedule's id and
its ``secret_salt`` (a new salt is a new secret), so a copy of the database does not sign.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.crypto import salted_hmac

from orkestrel.cron import CronError, next_due, time_zone, validate_cron

from .jobs import AgentJob
from .profiles import AgentProfile

__all__ = ["Schedule", "ScheduleRun", "new_salt"]

# Namespaces the webhook secrets' derivation from every other use of ``SECRET_KEY``.
SECRET_PURPOSE = "orkestrel.schedules.webhook-secret"
SECRET_PREFIX = "whsec_"


def new_salt() -> str:
    """A fresh salt: a new webhook secret for the schedule that takes it."""
    return secrets.token_hex(16)


class Schedule(models.Model):
    """A job to run on a cron (in a time zone), on its webhook, or at a **Run now**."""

    # Not agent configuration: a schedule must not invalidate cached profile configurations.
    is_configuration = False

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="schedules",
        verbose_name="user",
        help_text="Whose job it runs: the job is theirs, with their access to the profile.",
    )
    name = models.CharField("name", max_length=100)
    profile = models.ForeignKey(
        AgentProfile,
        on_delete=models.CASCADE,
        related_name="schedules",
        verbose_name="profile",
    )
    prompt = models.TextField("prompt", help_text="The job's message to the agent.")
    cron = models.CharField(
        "cron",
        max_length=100,
        help_text="Five fields: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5.",
    )
    timezone = models.CharField(
        "time zone", max_length=64, default="UTC", help_text="An IANA name, e.g. Europe/Lisbon."
    )
    enabled = models.BooleanField(
        "enabled", default=True, help_text="Off: neither the cron nor the webhook starts it."
    )
    next_run = models.DateTimeField(
        "next run", null=True, blank=True, help_text="When the cron is next due (UTC)."
    )
    last_run = models.DateTimeField("last run", null=True, blank=True)
    run_requested = models.DateTimeField(
        "run requested",
        null=True,
        blank=True,
        help_text="An operator's Run now, which the scheduler's next tick starts.",
    )
    secret_salt = models.CharField("secret salt", max_length=64, default=new_salt, editable=False)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "schedule"
        verbose_name_plural = "schedules"
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["user", "-created"], name="agents_schedule_user_idx"),
            # What the scheduler's tick scans: enabled schedules by when they are due.
            models.Index(
                fields=["next_run"], condition=Q(enabled=True), name="agents_schedule_due_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        try:
            self.cron = validate_cron(self.cron)
        except CronError as error:
            errors["cron"] = str(error)
        try:
            time_zone(self.timezone)
        except CronError as error:
            errors["timezone"] = str(error)
        if errors:
            raise ValidationError(errors)

    def plan(self, now: datetime) -> None:
        """Set ``next_run`` from the cron, after ``now`` (none while disabled)."""
        self.next_run = next_due(self.cron, self.timezone, now) if self.enabled else None

    def webhook_secret(self) -> str:
        """The secret the webhook's signatures are made with (derived, never stored)."""
        digest = salted_hmac(
            SECRET_PURPOSE, f"{self.pk}:{self.secret_salt}", algorithm="sha256"
        ).hexdigest()
        return SECRET_PREFIX + digest


class ScheduleRun(models.Model):
    """One start of a schedule: what started it and the job it started (its history)."""

    class Trigger(models.TextChoices):
        CRON = "cron", "cron"
        RUN_NOW = "run_now", "run now"
        WEBHOOK = "webhook", "webhook"

    schedule = models.ForeignKey(
        Schedule, on_delete=models.CASCADE, related_name="runs", verbose_name="schedule"
    )
    # Purged with its job: the history lists what is still kept.
    job = models.ForeignKey(
        AgentJob,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="schedule_runs",
        verbose_name="job",
    )
    trigger = models.CharField("trigger", max_length=16, choices=Trigger.choices)
    due = models.DateTimeField(
        "due", null=True, blank=True, help_text="The cron's moment it ran for."
    )
    # A webhook's signature (hex), unique per schedule: the same signature twice is a replay.
    signature = models.CharField("signature", max_length=128, blank=True)
    error = models.TextField("error", blank=True, help_text="Why no job was started.")
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "schedule run"
        verbose_name_plural = "schedule runs"
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["schedule", "-created"], name="agents_schedrun_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "signature"],
                condition=~Q(signature=""),
                name="agents_schedrun_signature_once",
            ),
            models.CheckConstraint(
                condition=Q(trigger__in=["cron", "run_now", "webhook"]),
                name="agents_schedrun_trigger_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} {self.trigger} {self.created:%Y-%m-%d %H:%M}"
