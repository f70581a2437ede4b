"""Starting a schedule: its history row, then its job (on the workers or here, as jobs run).

What the scheduler's tick, the API's ``run`` and the webhook all call. The job is the
schedule's user's, with the schedule's profile and prompt (a webhook's body, when it sends
one, follows the prompt). A profile the user may no longer use (disabled, or access
withdrawn) starts nothing (``ProfileUnavailable``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from orkestrel.db import in_thread

from ..jobs import JobRequest, job_service
from ..models import AgentJob, ScheduleRun
from .firing import Firing, link_job, note_error, record_start, usable_profile

__all__ = ["PAYLOAD_HEADING", "ProfileUnavailable", "Started", "start_schedule"]

logger = logging.getLogger(__name__)

Trigger = ScheduleRun.Trigger

# What introduces a webhook's body in the job's message.
PAYLOAD_HEADING = "The webhook's request body:"


class ProfileUnavailable(Exception):
    """The schedule's profile is disabled, or its user may no longer use it."""

    code = "profile_unavailable"
    status = 409


@dataclass(frozen=True, slots=True)
class Started:
    """A start of a schedule: its history row and the job it enqueued."""

    run_id: int
    job: AgentJob


async def start_schedule(firing: Firing, *, signature: str = "", payload: str = "") -> Started:
    """Record the start and enqueue its job.

    Refused with nothing written: ``ProfileUnavailable`` (a cron's start keeps a history row
    saying so, for the operator who wonders why nothing ran), ``Replayed`` (a used
    ``signature``).
    """
    profile = await in_thread(usable_profile)(firing)
    if profile is None:
        error = "The schedule's profile is disabled, or its user may no longer use it."
        if firing.trigger == Trigger.CRON:
            await in_thread(note_error)(await in_thread(record_start)(firing), error)
        raise ProfileUnavailable(error)
    run_id = await in_thread(record_start)(firing, signature)
    content = firing.prompt if not payload else f"{firing.prompt}\n\n{PAYLOAD_HEADING}\n{payload}"
    request = JobRequest(profile=profile, messages=[{"role": "user", "content": content}])
    try:
        job = await job_service.enqueue(user_id=firing.user_id, request=request)
    except Exception as error:
        await in_thread(note_error)(run_id, f"The job could not be enqueued: {error}")
        raise
    await in_thread(link_job)(run_id, str(job.pk))
    logger.info("schedule %s started job %s (%s)", firing.schedule_id, job.pk, firing.trigger)
    return Started(run_id=run_id, job=job)
