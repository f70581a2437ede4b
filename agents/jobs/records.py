"""The jobs' database side: creating, claiming, beating, cancelling and settling ``AgentJob`` rows.

Every function here is synchronous (called through ``orkestrel.db.in_thread``) and writes with
conditional ``UPDATE``s: whichever process's statement lands first wins a claim, and a process
that lost a job (its heartbeat went stale and another took over) can no longer write to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from orkestrel.core import AgentJobInput, QueueRecord

from ..models import AgentJob, AgentProfile, config_revision_subquery
from ..runtime.profile_config import ProfileConfig, profile_config

__all__ = [
    "JobSettled",
    "JobSpec",
    "Outcome",
    "beat",
    "claim_jobs",
    "create_job",
    "finish_job",
    "get_job",
    "others_open",
    "owned_job",
    "request_cancel",
    "save_attempts",
    "start_job",
]

Status = AgentJob.Status
OPEN = AgentJob.OPEN


class JobSettled(Exception):
    """The job has settled already (nothing left to cancel)."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What one execution of a job is built from, read in the hop that started it.

    ``record.attempts`` counts the attempts made before this execution (an interrupted one
    included), as the kit's queue expects of a restored record.
    """

    record: QueueRecord
    user_id: int
    profile: AgentProfile
    config: ProfileConfig
    retries: int
    allow_partial: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an execution ended, as the row stores it."""

    status: str
    result: Mapping[str, Any] | None = None
    error_code: str = ""
    error: str = ""


def create_job(
    *,
    user_id: int,
    profile: AgentProfile,
    job: AgentJobInput,
    retries: int,
    allow_partial: bool,
    owner: str,
) -> AgentJob:
    """Store a new job, held by ``owner`` from the start (durable once this returns)."""
    return AgentJob.objects.create(
        user_id=user_id,
        profile=profile,
        job=dict(job),
        retries=retries,
        allow_partial=allow_partial,
        owner=owner,
        heartbeat=timezone.now(),
    )


def owned_job(user_id: int, job_id: str) -> AgentJob | None:
    """The job ``job_id`` if it is the user's, else ``None``."""
    return AgentJob.objects.select_related("profile").filter(id=job_id, user_id=user_id).first()


def get_job(job_id: str) -> AgentJob | None:
    """The job ``job_id``, whoever it belongs to (for the service's own waits)."""
    return AgentJob.objects.filter(id=job_id).first()


def _stale(stale: float) -> Q:
    cutoff = timezone.now() - timedelta(seconds=stale)
    return Q(heartbeat__lt=cutoff) | Q(heartbeat__isnull=True)


def claim_jobs(owner: str, stale: float) -> list[QueueRecord]:
    """Take over the open jobs of dead processes; return every open job ``owner`` holds.

    A job is orphaned when its holder's heartbeat is older than ``stale`` seconds. An orphan
    whose cancel was requested is settled as cancelled instead of being run again.
    """
    now = timezone.now()
    orphans = AgentJob.objects.filter(_stale(stale), status__in=OPEN).exclude(owner=owner)
    with transaction.atomic():
        orphans.filter(cancel_requested=True).update(status=Status.CANCELLED, finished=now)
        orphans.update(owner=owner, heartbeat=now, status=Status.QUEUED)
    rows = AgentJob.objects.filter(owner=owner, status__in=OPEN).order_by("created", "id")
    return [
        QueueRecord(str(pk), job, attempts)
        for pk, job, attempts in rows.values_list("id", "job", "attempts")
    ]


def others_open(owner: str) -> bool:
    """Whether another process holds open jobs (they are claimed once its heartbeat stops)."""
    return AgentJob.objects.filter(status__in=OPEN).exclude(owner=owner).exists()


def start_job(job_id: str, owner: str) -> JobSpec | Outcome | None:
    """Mark the job running for its next attempt and load what it runs with.

    ``None`` when ``owner`` does not hold it open any more (cancelled, or taken over); an
    ``Outcome`` (already stored) when its profile can no longer run it.
    """
    now = timezone.now()
    started = AgentJob.objects.filter(
        id=job_id, owner=owner, status__in=OPEN, cancel_requested=False
    ).update(
        status=Status.RUNNING,
        attempts=F("attempts") + 1,
        heartbeat=now,
        started=Coalesce(F("started"), now),
    )
    if not started:
        return None
    row = (
        AgentJob.objects.select_related("profile")
        .annotate(config_revision=config_revision_subquery())
        .get(id=job_id)
    )
    profile = row.profile
    if profile is None or not profile.enabled:
        return _unavailable(job_id, owner, "the job's agent profile is no longer available")
    config = profile_config(profile, row.config_revision)
    if config.endpoint is None:
        return _unavailable(job_id, owner, f"profile {profile.slug!r} names a missing endpoint")
    return JobSpec(
        record=QueueRecord(str(row.pk), row.job, row.attempts - 1),
        user_id=row.user_id,
        profile=profile,
        config=config,
        retries=row.retries,
        allow_partial=row.allow_partial,
    )


def _unavailable(job_id: str, owner: str, problem: str) -> Outcome:
    outcome = Outcome(Status.ERROR, error_code="profile_unavailable", error=problem)
    finish_job(job_id, owner, outcome)
    return outcome


def save_attempts(job_id: str, owner: str, attempts: int) -> bool:
    """``attempts`` attempts failed and the next one starts (the kit's retry); whether held."""
    return bool(
        AgentJob.objects.filter(id=job_id, owner=owner, status__in=OPEN).update(
            attempts=attempts + 1, heartbeat=timezone.now()
        )
    )


def finish_job(job_id: str, owner: str, outcome: Outcome) -> bool:
    """Store how the job ended, if ``owner`` still holds it; whether it did."""
    return bool(
        AgentJob.objects.filter(id=job_id, owner=owner, status__in=OPEN).update(
            status=outcome.status,
            result=dict(outcome.result) if outcome.result is not None else None,
            error_code=outcome.error_code,
            error=outcome.error,
            finished=timezone.now(),
        )
    )


def beat(owner: str) -> list[str]:
    """Keep ``owner``'s open jobs alive; return the running ones whose cancel was requested."""
    held = AgentJob.objects.filter(owner=owner, status__in=OPEN)
    held.update(heartbeat=timezone.now())
    return [
        str(pk)
        for pk in held.filter(status=Status.RUNNING, cancel_requested=True).values_list(
            "pk", flat=True
        )
    ]


def request_cancel(user_id: int, job_id: str) -> AgentJob:
    """Cancel the user's job: a queued one at once, a running one once its holder stops it.

    Raises ``LookupError`` (not the user's job) or ``JobSettled``.
    """
    now = timezone.now()
    mine = AgentJob.objects.filter(id=job_id, user_id=user_id)
    with transaction.atomic():
        queued = mine.filter(status=Status.QUEUED).update(
            status=Status.CANCELLED, cancel_requested=True, finished=now
        )
        if not queued:
            mine.filter(status=Status.RUNNING).update(cancel_requested=True)
        row = mine.select_related("profile").first()
    if row is None:
        raise LookupError(f"no job {job_id!r}")
    if not queued and not (row.status == Status.RUNNING and row.cancel_requested):
        raise JobSettled(f"job {job_id!r} has settled ({row.status})")
    return row
