"""Examples of ``/api/schedules/`` for the schema: requests, answers and refusals."""

from __future__ import annotations

from typing import Any

from .examples import (
    CREATED,
    JOB_ID,
    JOB_QUEUED_VALUE,
    LATER,
    Refusal,
    example,
    invalid,
    not_found,
)

__all__ = [
    "CREATED_SCHEDULE",
    "NEW_SCHEDULE",
    "NO_SCHEDULE",
    "PAUSE",
    "PAUSED",
    "PROFILE_UNAVAILABLE",
    "SCHEDULE",
    "SCHEDULE_INVALID",
    "SCHEDULE_RUNS",
    "STARTED",
]

SCHEDULE_ID = "2b7c9d1e-4f3a-4e8b-9c6d-5a4b3c2d1e0f"
SECRET = "whsec_" + "3f" * 32


def _schedule(**changes: Any) -> dict[str, Any]:
    return {
        "id": SCHEDULE_ID,
        "name": "Morning digest",
        "profile": "demo",
        "prompt": "Summarise yesterday's open issues in five bullet points.",
        "cron": "0 8 * * 1-5",
        "timezone": "Europe/Lisbon",
        "enabled": True,
        "next_run": "2026-05-04T07:00:00Z",
        "last_run": None,
        "webhook_url": f"https://orkestrel.example/hooks/schedules/{SCHEDULE_ID}/",
        "created": CREATED,
        "updated": CREATED,
        **changes,
    }


NEW_SCHEDULE = example(
    "Weekday mornings in Lisbon",
    {
        "name": "Morning digest",
        "profile": "demo",
        "prompt": "Summarise yesterday's open issues in five bullet points.",
        "cron": "0 8 * * 1-5",
        "timezone": "Europe/Lisbon",
    },
)
CREATED_SCHEDULE = example(
    "Created, with its webhook secret (shown this once)", {**_schedule(), "secret": SECRET}
)
SCHEDULE = example("A schedule", _schedule(last_run=LATER))
PAUSE = example("Pause it", {"enabled": False})
PAUSED = example("Paused", _schedule(enabled=False, next_run=None, updated=LATER))
SCHEDULE_INVALID = invalid(
    "A cron with six fields",
    cron=[
        "'0 0 8 * * 1' has 6 fields; a cron expression has five: minute hour day-of-month "
        "month day-of-week (e.g. '0 9 * * 1-5')."
    ],
)
NO_SCHEDULE = not_found("No such schedule.")
STARTED = example("Started: its job, queued", {**JOB_QUEUED_VALUE, "id": JOB_ID})
SCHEDULE_RUNS = example(
    "A webhook's start",
    {
        "id": 12,
        "trigger": "webhook",
        "due": None,
        "error": "",
        "created": LATER,
        "job": JOB_QUEUED_VALUE,
    },
)
PROFILE_UNAVAILABLE = Refusal(
    status=409,
    name="Its profile is unavailable",
    detail="The schedule's profile is disabled, or its user may no longer use it.",
    code="profile_unavailable",
)
