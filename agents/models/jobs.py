"""Agent jobs: one-shot agent runs a user enqueued, durable until they settle and kept after.

A row is the job's whole life: what was asked (``job``, the kit's ``AgentJobInput`` naming
the profile as its provider), the queue's options, which server process holds it (``owner``,
kept alive by ``heartbeat``), and how it ended (``result`` or ``error``). A row left open by
a process that died has a stale heartbeat; another process claims it and runs it again.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .profiles import AgentProfile

__all__ = ["AgentJob"]


class AgentJob(models.Model):
    """One enqueued agent job of a user, from ``queued`` to a settled status."""

    # Not agent configuration: a job must not invalidate cached profile configurations.
    is_configuration = False

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        PARTIAL = "partial", "Partial"
        ERROR = "error", "Error"
        CANCELLED = "cancelled", "Cancelled"

    # The statuses of a job that has not settled yet (a process holds it, or will).
    OPEN = (Status.QUEUED, Status.RUNNING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="agent_jobs",
        verbose_name="user",
        db_index=False,  # the (user, created) index leads with it
    )
    profile = models.ForeignKey(
        AgentProfile,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
        verbose_name="profile",
    )
    job = models.JSONField(
        "job", help_text="The kit's job input: the profile as provider, messages, options."
    )
    retries = models.PositiveSmallIntegerField("retries", default=0)
    allow_partial = models.BooleanField("allow partial", default=False)
    status = models.CharField(
        "status", max_length=16, choices=Status.choices, default=Status.QUEUED
    )
    attempts = models.PositiveIntegerField("attempts", default=0, help_text="Attempts started.")
    cancel_requested = models.BooleanField("cancel requested", default=False)
    owner = models.CharField(
        "owner", max_length=64, blank=True, help_text="The server process holding the job."
    )
    heartbeat = models.DateTimeField("heartbeat", null=True, blank=True)
    created = models.DateTimeField("created", auto_now_add=True)
    started = models.DateTimeField("started", null=True, blank=True)
    finished = models.DateTimeField("finished", null=True, blank=True)
    result = models.JSONField(
        "result", null=True, blank=True, help_text="content, thinking, usage, partial, stop."
    )
    error_code = models.CharField("error code", max_length=64, blank=True)
    error = models.TextField("error", blank=True)

    class Meta:
        verbose_name = "agent job"
        verbose_name_plural = "agent jobs"
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["user", "-created"], name="agents_job_user_idx"),
            # What start-up recovery scans: open jobs by holder and liveness.
            models.Index(
                fields=["owner", "heartbeat"],
                condition=Q(status__in=["queued", "running"]),
                name="agents_job_open_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=["queued", "running", "done", "partial", "error", "cancelled"]
                ),
                name="agents_job_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"

    @property
    def settled(self) -> bool:
        """Whether the job reached a final status."""
        return self.status not in self.OPEN
