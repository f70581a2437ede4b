"""Cron expressions with a time zone: when a schedule is next due, as a pure function of ``now``.

Five fields (minute, hour, day of month, month, day of week), read in the schedule's own time
zone (an IANA name: ``Europe/Lisbon``), so ``0 9 * * 1-5`` is nine in the morning there on
weekdays, summer and winter. The moments are answered in UTC. croniter does the cron maths;
this module only fixes the dialect (five fields, no seconds) and says what is wrong with an
expression in a sentence an operator can act on.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

__all__ = ["CronError", "next_due", "previous_due", "time_zone", "validate_cron"]

FIELDS = 5


class CronError(ValueError):
    """A cron expression or time zone that cannot be used; the message says why."""

    code = "invalid_cron"


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``CronError`` when there is none of that name)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"{name!r} is not a time zone (use an IANA name: Europe/Lisbon).") from None


def validate_cron(expression: str) -> str:
    """``expression`` tidied (single spaces), or ``CronError`` saying what is wrong with it."""
    fields = expression.split()
    if len(fields) != FIELDS:
        raise CronError(
            f"{expression!r} has {len(fields)} fields; a cron expression has five: "
            "minute hour day-of-month month day-of-week (e.g. '0 9 * * 1-5')."
        )
    tidy = " ".join(fields)
    if not croniter.is_valid(tidy):
        raise CronError(f"{expression!r} is not a valid cron expression.")
    return tidy


def next_due(expression: str, zone: str, after: datetime) -> datetime:
    """The first moment strictly after ``after`` that ``expression`` names in ``zone`` (UTC)."""
    start = _aware(after).astimezone(time_zone(zone))
    found: datetime = croniter(validate_cron(expression), start).get_next(datetime)
    return found.astimezone(UTC)


def previous_due(expression: str, zone: str, at: datetime) -> datetime:
    """The last moment at or before ``at`` that ``expression`` names in ``zone`` (UTC)."""
    start = _aware(at).astimezone(time_zone(zone))
    # croniter's ``get_prev`` is strictly before its start: a moment exactly on time counts.
    found: datetime = croniter(validate_cron(expression), start).get_prev(datetime)
    following = next_due(expression, zone, found)
    return following if following <= _aware(at) else found.astimezone(UTC)


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise CronError("a moment without a time zone is ambiguous: pass an aware datetime")
    return moment
