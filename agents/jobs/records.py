"""The jobs' database side: creating, claiming, beating, cancelling and settling ``AgentJob`` rows.

Every function here is synchronous (called through ``orkestrel.db.in_thread``) and writes with
conditional ``UPDATE``s: whichever process's statement lands first wins a claim, and a process
that lost a job (its heartbeat went stale and another took over) can no longer write to it.

On Celery workers the row is the job's lease: a job sent to the broker is held by no one
(``owner`` blank) until a worker's task claims it (``claim_job``); a worker's lease that went
stale is expired (``expire_leases``) and the job sent again, for another worker to claim. A
message for a job someone else holds, or that has settled, does nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.db import transaction
from django.db.models import Case, F, JSONField, Q, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from orkestrel.core import AgentJobError, AgentJobInput, AgentResult, QueueRecord, validate_job
from orkestrel.db import chunked
from orkestrel.protocol import result_payload

from ..models import AgentJob, AgentProfile, config_revision_subquery
from ..runtime.profile_config import ProfileConfig, profile_config
from ..runtime.progress import ProgressPayload
from ..usage.charge import KeyRef

__all__ = [
    "LOST_RERUNS",
    "Beat",
    "Claim",
    "JobRequest",
    "JobSettled",
    "JobSpec",
    "Outcome",
    "beat",
    "cancel_job",
    "claim_job",
    "claim_jobs",
    "create_job",
    "expire_leases",
    "finish_job",
    "get_job",
    "others_open",
    "outcome_of",
    "owned_job",
    "request_cancel",
    "save_attempts",
    "start_job",
    "tree_usage",
    "undelivered",
]

Status = AgentJob.Status
OPEN = AgentJob.OPEN
# Attempts lost with their worker that are run again beyond the job's retries: a job is started
# at most ``retries + 1 + LOST_RERUNS`` times. One more loss settles it (it likely kills them).
LOST_RERUNS = 1
# How many leases one pass expires (the next pass takes the rest).
EXPIRE_BATCH = 500

type Claim = Literal["claimed", "held", "settled", "missing"]


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
    depth: int = 0
    # The API key that enqueued the job (or its root): its usage is charged to it.
    key: KeyRef | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an execution ended, as the row stores it."""

    status: str
    result: Mapping[str, Any] | None = None
    error_code: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRequest:
    """What a user asks a job to do: a profile, input messages, a system prompt, options.

    ``None`` options take the profile's own; ``system`` follows the profile's prompt. A
    delegated job names its ``parent`` job and its ``depth`` below the job someone enqueued.
    """

    profile: AgentProfile
    messages: Sequence[Mapping[str, str]]
    system: str | None = None
    limit: int | None = None
    timeout: float | None = None
    budget: int | None = None
    allow_partial: bool = False
    retries: int = 0
    parent: str | None = None
    depth: int = 0

    def job(self) -> AgentJobInput:
        """The kit's job: the profile as provider, and only what the user gave."""
        job: AgentJobInput = {
            "provider": self.profile.slug,
            "messages": [{"role": m["role"], "content": m["content"]} for m in self.messages],
        }
        if self.system:
            job["system"] = self.system
        if self.limit is not None:
            job["limit"] = self.limit
        if self.timeout is not None:
            job["timeout"] = float(self.timeout)
        if self.budget is not None:
            job["budget"] = self.budget
        return validate_job(job)


def outcome_of(value: AgentResult | BaseException, *, cancelled: bool) -> Outcome:
    """How a job ended, from what its queue answered and whether a cancel was asked for."""
    if isinstance(value, AgentResult):
        if cancelled and value.stop == "abort":
            return Outcome(Status.CANCELLED, result_payload(value))
        return Outcome(Status.PARTIAL if value.partial else Status.DONE, result_payload(value))
    partial = result_payload(value.partial) if isinstance(value, AgentJobError) else None
    if cancelled:
        return Outcome(Status.CANCELLED, partial)
    code = getattr(value, "code", None)
    return Outcome(
        Status.ERROR,
        partial,
        error_code=code.lower() if isinstance(code, str) else "job_failed",
        error=(str(value) or type(value).__name__)[:2000],
    )


def create_job(
    *,
    user_id: int,
    profile: AgentProfile,
    job: AgentJobInput,
    retries: int,
    allow_partial: bool,
    owner: str,
    parent: str | None = None,
    depth: int = 0,
    key: KeyRef | None = None,
) -> AgentJob:
    """Store a new job, held by ``owner`` from the start (durable once this returns); its
    usage is charged to ``key`` (a delegated job's: to its parent's key)."""
    if key is None and parent is not None:
        found = AgentJob.objects.filter(pk=parent).values_list("key_id", "key_name").first()
        if found is not None and found[0] is not None:
            key = KeyRef(found[0], found[1])
    return AgentJob.objects.create(
        key_id=key.id if key is not None else None,
        key_name=key.name if key is not None else "",
        user_id=user_id,
        profile=profile,
        job=dict(job),
        retries=retries,
        allow_partial=allow_partial,
        owner=owner,
        heartbeat=timezone.now(),
        parent_id=parent,
        depth=depth,
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


def claim_job(job_id: str, owner: str) -> Claim:
    """Claim a job sent to workers for ``owner``: ``"claimed"`` when it is now ``owner``'s.

    Only a job nobody holds is claimed (or one ``owner`` holds already): ``"held"`` when
    another holder has it (if that holder is gone, its lease expires and the job is sent
    again), ``"settled"`` or ``"missing"`` when there is nothing to run.
    """
    claimed = (
        AgentJob.objects.filter(id=job_id, status__in=OPEN, cancel_requested=False)
        .filter(Q(owner="") | Q(owner=owner))
        .update(owner=owner, heartbeat=timezone.now())
    )
    if claimed:
        return "claimed"
    status = AgentJob.objects.filter(id=job_id).values_list("status", flat=True).first()
    if status is None:
        return "missing"
    return "held" if status in OPEN else "settled"


def expire_leases(stale: float) -> list[str]:
    """Free the open jobs whose holder's heartbeat is older than ``stale`` seconds; their ids.

    A freed job is queued again for nobody, to be sent to the broker; so is a job whose
    message never reached the broker (no holder and no heartbeat: see ``undelivered``). An
    expired job whose cancel was requested settles as cancelled, and one that has used its
    attempts (``retries + 1 + LOST_RERUNS``) settles as an error (``worker_lost``) instead.
    Each row is freed by a conditional ``UPDATE``: of processes expiring at once, one wins.
    """
    now = timezone.now()
    orphans = AgentJob.objects.filter(status__in=OPEN).filter(
        (_stale(stale) & ~Q(owner="")) | Q(owner="", heartbeat__isnull=True)
    )
    freed: list[str] = []
    found = orphans.values_list(
        "pk", "owner", "heartbeat", "cancel_requested", "attempts", "retries"
    )
    for pk, owner, heartbeat, cancel_requested, attempts, retries in found[:EXPIRE_BATCH]:
        still = AgentJob.objects.filter(pk=pk, owner=owner, heartbeat=heartbeat, status__in=OPEN)
        if cancel_requested:
            still.update(status=Status.CANCELLED, finished=now)
        elif attempts >= retries + 1 + LOST_RERUNS:
            still.update(
                status=Status.ERROR,
                error_code="worker_lost",
                error=f"the job's worker was lost in its last allowed attempt ({attempts})",
                finished=now,
            )
        elif still.update(owner="", heartbeat=now, status=Status.QUEUED):
            freed.append(str(pk))
    return freed


def undelivered(job_ids: list[str]) -> None:
    """The messages of these unheld jobs did not reach the broker: the next expiry resends."""
    AgentJob.objects.filter(id__in=job_ids, owner="", status__in=OPEN).update(heartbeat=None)


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
        # The attempt counts from zero (its meter does).
        progress={},
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
        depth=row.depth,
        key=KeyRef(row.key_id, row.key_name) if row.key_id is not None else None,
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


def finish_job(
    job_id: str, owner: str, outcome: Outcome, progress: ProgressPayload | None = None
) -> bool:
    """Store how the job ended (and its last ``progress``), if ``owner`` still holds it;
    whether it did.

    A settled job cancels the children its delegate calls left open (a parent stopped or
    failed mid-call, or an earlier attempt's).
    """
    last: dict[str, Any] = {"progress": dict(progress)} if progress is not None else {}
    finished = bool(
        AgentJob.objects.filter(id=job_id, owner=owner, status__in=OPEN).update(
            status=outcome.status,
            result=dict(outcome.result) if outcome.result is not None else None,
            error_code=outcome.error_code,
            error=outcome.error,
            finished=timezone.now(),
            **last,
        )
    )
    if finished:
        AgentJob.objects.filter(parent_id=uuid.UUID(job_id), status__in=OPEN).request_cancel()
    return finished


@dataclass(frozen=True, slots=True)
class Beat:
    """What a heartbeat found: running jobs whose cancel was requested, and jobs now held by
    another process (taken over after this one's beats went stale)."""

    cancelled: frozenset[str]
    lost: frozenset[str]


def _progressed(job_ids: Sequence[str], progress: Mapping[str, ProgressPayload]) -> dict[str, Any]:
    """The ``progress`` column's new value for the jobs of one beat's ``UPDATE``: each job's
    own, the rest left as they are (nothing when none of them moved)."""
    moved = [
        When(pk=job_id, then=Value(dict(progress[job_id]), output_field=JSONField()))
        for job_id in job_ids
        if job_id in progress
    ]
    if not moved:
        return {}
    return {"progress": Case(*moved, default=F("progress"), output_field=JSONField())}


def beat(
    owner: str,
    running: Collection[str],
    progress: Mapping[str, ProgressPayload] | None = None,
) -> Beat:
    """Keep the open jobs ``owner`` is ``running`` alive; which of them it must stop.

    ``progress`` is how far the jobs that moved since the last beat are: stored in the same
    ``UPDATE`` (a job's progress costs no write of its own). Only running jobs are kept
    alive: a job its holder stopped running (a failure outside the job) goes stale, and is
    taken over like a dead process's.
    """
    now = timezone.now()
    still: set[str] = set()
    cancelled: set[str] = set()
    for some in chunked(list(running)):
        held = AgentJob.objects.filter(pk__in=some, owner=owner, status__in=OPEN)
        held.update(heartbeat=now, **_progressed(some, progress or {}))
        for pk, status, cancel in held.values_list("pk", "status", "cancel_requested"):
            still.add(str(pk))
            if status == Status.RUNNING and cancel:
                cancelled.add(str(pk))
    gone = [job_id for job_id in running if job_id not in still]
    # A job no longer open is mostly one that settled here; only another holder's is lost.
    kept: set[str] = set()
    for some in chunked(gone):
        mine = AgentJob.objects.filter(pk__in=some, owner=owner).values_list("pk", flat=True)
        kept.update(str(pk) for pk in mine)
    return Beat(cancelled=frozenset(cancelled), lost=frozenset(gone) - kept)


def request_cancel(user_id: int, job_id: str) -> AgentJob:
    """Cancel the user's job: a queued one at once, a running one once its holder stops it.

    Raises ``LookupError`` (not the user's job) or ``JobSettled``.
    """
    mine = AgentJob.objects.filter(id=job_id, user_id=user_id)
    with transaction.atomic():
        was = mine.values_list("status", flat=True).first()
        # Its delegated descendants too.
        mine.request_cancel()
        row = mine.select_related("profile").first()
    if row is None:
        raise LookupError(f"no job {job_id!r}")
    if was not in OPEN:
        raise JobSettled(f"job {job_id!r} has settled ({row.status})")
    return row


def cancel_job(job_id: str) -> bool:
    """Cancel ``job_id`` and its descendants, whoever they belong to (a parent's delegate
    call stopped); whether it was open."""
    return bool(AgentJob.objects.filter(id=job_id).request_cancel())


def tree_usage(job_id: str) -> int:
    """The tokens ``job_id`` and every job it delegated to used (their results' totals)."""
    total = 0
    level = [uuid.UUID(job_id)]
    while level:
        for result in AgentJob.objects.filter(pk__in=level).values_list("result", flat=True):
            usage = result.get("usage") if isinstance(result, dict) else None
            if isinstance(usage, dict) and isinstance(usage.get("total"), int):
                total += usage["total"]
        level = list(AgentJob.objects.filter(parent__in=level).values_list("pk", flat=True))
    return total
