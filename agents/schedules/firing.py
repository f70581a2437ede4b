"""The schedules' database side: claiming due schedules, and each start's history row.

Synchronous (called through ``orkestrel.db.in_thread``). A due schedule is claimed with a
conditional ``UPDATE`` that moves its ``next_run`` (and clears a **Run now** request) only if
they are still what this process read: of several processes ticking at once, exactly one
fires each occurrence. A schedule down for a while fires once, then waits for its cron's next
moment after now (missed occurrences are not caught up). A webhook's start records its
signature first: a second start with the same one breaks a unique constraint (``Replayed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q

from orkestrel.cron import CronError, next_due

from ..models import AgentProfile, Schedule, ScheduleRun

__all__ = [
    "BATCH",
    "Firing",
    "Replayed",
    "claim_due",
    "link_job",
    "note_error",
    "record_start",
    "usable_profile",
]

# Schedules one tick claims (the next tick takes the rest).
BATCH = 100
Trigger = ScheduleRun.Trigger


class Replayed(Exception):
    """This webhook signature started the schedule already."""

    code = "signature_replayed"


@dataclass(frozen=True, slots=True)
class Firing:
    """A schedule to start now: whose, with what, why, and the cron's moment if that."""

    schedule_id: str
    user_id: int
    profile_id: int
    prompt: str
    trigger: str
    due: datetime | None = None

    @classmethod
    def of(cls, schedule: Schedule, trigger: str, due: datetime | None = None) -> Firing:
        return cls(
            schedule_id=str(schedule.pk),
            user_id=schedule.user_id,
            profile_id=schedule.profile_id,
            prompt=schedule.prompt,
            trigger=trigger,
            due=due,
        )


def claim_due(now: datetime) -> list[Firing]:
    """Claim the schedules due at ``now`` (cron, or an operator's Run now): the firings won."""
    due = Q(enabled=True, next_run__lte=now) | Q(run_requested__isnull=False)
    firings: list[Firing] = []
    for schedule in Schedule.objects.filter(due).order_by("next_run")[:BATCH]:
        cron_due = schedule.enabled and schedule.next_run is not None and schedule.next_run <= now
        following = schedule.next_run
        if cron_due or (schedule.enabled and following is None):
            try:
                following = next_due(schedule.cron, schedule.timezone, now)
            except CronError:
                following = None  # an expression that no longer parses stops the cron
        won = Schedule.objects.filter(
            pk=schedule.pk, next_run=schedule.next_run, run_requested=schedule.run_requested
        ).update(next_run=following, run_requested=None, last_run=now)
        if not won:
            continue  # another process claimed it first
        if schedule.run_requested is not None:
            firings.append(Firing.of(schedule, Trigger.RUN_NOW))
        if cron_due:
            firings.append(Firing.of(schedule, Trigger.CRON, schedule.next_run))
    return firings


def record_start(firing: Firing, signature: str = "") -> int:
    """The history row of this start (``Replayed`` when ``signature`` was taken already)."""
    try:
        with transaction.atomic():
            row = ScheduleRun.objects.create(
                schedule_id=firing.schedule_id,
                trigger=firing.trigger,
                due=firing.due,
                signature=signature,
            )
    except IntegrityError:
        raise Replayed("This signature was used already.") from None
    Schedule.objects.filter(pk=firing.schedule_id).update(last_run=row.created)
    return row.pk


def usable_profile(firing: Firing) -> AgentProfile | None:
    """The schedule's profile, if enabled and its user may still use it."""
    return (
        AgentProfile.objects.usable_by(firing.user_id)
        .filter(pk=firing.profile_id, enabled=True)
        .first()
    )


def link_job(run_id: int, job_id: str) -> None:
    """Name the job the start made on its history row."""
    ScheduleRun.objects.filter(pk=run_id).update(job_id=job_id)


def note_error(run_id: int, error: str) -> None:
    """Say on the history row why the start made no job."""
    ScheduleRun.objects.filter(pk=run_id).update(error=error)
