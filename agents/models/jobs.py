"""Agent jobs: one-shot agent runs a user enqueued, durable until they settle and kept after.

A row is the job's whole life: what was asked (``job``, the kit's ``AgentJobInput`` naming
the profile as its provider), the queue's options, which server process holds it (``owner``,
kept alive by ``heartbeat``), how far it is (``progress``, written with the heartbeat: see
``agents.runtime.progress``; a settled job keeps its last) and how it ended (``result`` or
``error``). A row left open by a process that died has a stale heartbeat; another process
claims it and runs it again.

A job a ``delegate`` tool call started names its ``parent`` (a tree as deep as ``depth``); an
operator's retry keeps the earlier runs in ``history``. ``AgentJobQuerySet`` holds the
requests an operator (or a settling parent) makes at the database level: the process holding
a job acts on them at its next heartbeat, and a job nobody holds is sent again by the sweep.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from .profiles import AgentProfile

__all__ = ["AgentJob", "AgentJobQuerySet"]

# The statuses an operator may run again.
RETRYABLE = ("error", "cancelled")


class AgentJobQuerySet(models.QuerySet["AgentJob"]):
    """Operators' and parents' requests on jobs, made in the database (see the module)."""

    def request_cancel(self) -> int:
        """Cancel these jobs and their open descendants: a queued one at once, a running one
        once its holder reads the flag (at its next heartbeat); how many were open."""
        now = timezone.now()
        found = 0
        with transaction.atomic():
            level = list(self.filter(status__in=AgentJob.OPEN).values_list("pk", flat=True))
            while level:
                found += len(level)
                rows = AgentJob.objects.filter(pk__in=level)
                rows.filter(status=AgentJob.Status.QUEUED).update(
                    status=AgentJob.Status.CANCELLED, cancel_requested=True, finished=now
                )
                rows.filter(status=AgentJob.Status.RUNNING).update(cancel_requested=True)
                level = list(
                    AgentJob.objects.filter(parent__in=level, status__in=AgentJob.OPEN)
                    .exclude(pk__in=level)
                    .values_list("pk", flat=True)
                )
        return found

    def retry(self) -> int:
        """Run these failed or cancelled jobs again: each earlier run goes to ``history`` and
        the job is queued for nobody, with its attempts counted afresh; how many."""
        count = 0
        with transaction.atomic():
            for row in self.select_for_update().filter(status__in=RETRYABLE):
                updated = AgentJob.objects.filter(pk=row.pk, status=row.status).update(
                    status=AgentJob.Status.QUEUED,
                    history=[*row.history, row.run_record()],
                    attempts=0,
                    cancel_requested=False,
                    owner="",
                    # No holder and no heartbeat: the sweep sends it (``expire_leases``).
                    heartbeat=None,
                    started=None,
                    finished=None,
                    result=None,
                    progress={},
                    error_code="",
                    error="",
                )
                count += updated
        return count


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
    # The key that enqueued it (its usage is charged to it); by id and name, no foreign key.
    key_id = models.BigIntegerField("API key id", null=True, blank=True, editable=False)
    key_name = models.CharField("API key name", max_length=100, blank=True, editable=False)
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
    progress = models.JSONField(
        "progress",
        default=dict,
        blank=True,
        help_text="How far its latest attempt got: turns, tools, last_tool, tokens, text.",
    )
    error_code = models.CharField("error code", max_length=64, blank=True)
    error = models.TextField("error", blank=True)
    parent = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="children",
        verbose_name="parent",
        help_text="The job whose delegate tool call started this one.",
    )
    depth = models.PositiveSmallIntegerField(
        "depth", default=0, help_text="How many delegations down from a job someone enqueued."
    )
    history = models.JSONField(
        "earlier runs",
        default=list,
        blank=True,
        help_text="Each run before an operator's retry: status, attempts, times, error.",
    )

    objects = AgentJobQuerySet.as_manager()

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

    def run_record(self) -> dict[str, Any]:
        """This run as ``history`` keeps it once the job is retried."""
        return {
            "status": self.status,
            "attempts": self.attempts,
            "owner": self.owner,
            "started": self.started.isoformat() if self.started else None,
            "finished": self.finished.isoformat() if self.finished else None,
            "error_code": self.error_code,
            "error": self.error,
            "result": self.result,
        }
