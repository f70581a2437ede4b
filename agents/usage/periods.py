"""A quota's period as a window of time: pure, the clock is the caller's (``now``).

Periods are calendar ones in UTC: a day from midnight, a week from Monday's midnight, a month
from the first's; a quota resets when the next one begins.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal, assert_never

__all__ = ["Period", "window"]

Period = Literal["day", "week", "month"]


def window(period: Period, now: datetime) -> tuple[datetime, datetime]:
    """The period holding ``now`` (aware): its start, and when it resets (the next start)."""
    moment = now.astimezone(UTC)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    match period:
        case "day":
            return midnight, midnight + timedelta(days=1)
        case "week":
            start = midnight - timedelta(days=midnight.weekday())
            return start, start + timedelta(days=7)
        case "month":
            start = midnight.replace(day=1)
            if start.month == 12:
                return start, start.replace(year=start.year + 1, month=1)
            return start, start.replace(month=start.month + 1)
        case unknown:
            assert_never(unknown)
