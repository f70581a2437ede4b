"""A quota's period as a window: calendar days, weeks (from Monday) and months, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from agents.usage.periods import window


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_a_day_runs_from_midnight_to_midnight():
    assert window("day", at("2026-12-06T15:30:00")) == (at("2026-12-06"), at("2026-12-07"))


def test_a_week_starts_on_monday():
    # 2026-12-06 is a Sunday: its week began on Monday the 30th of November.
    assert window("week", at("2026-12-06T23:59:59")) == (at("2026-11-30"), at("2026-12-07"))
    assert window("week", at("2026-12-07T00:00:00")) == (at("2026-12-07"), at("2026-12-14"))


def test_a_month_resets_on_the_first_and_december_rolls_into_january():
    assert window("month", at("2026-11-30T10:00:00")) == (at("2026-11-01"), at("2026-12-01"))
    assert window("month", at("2026-12-31T23:00:00")) == (at("2026-12-01"), at("2027-01-01"))


def test_a_clock_in_another_zone_is_read_in_utc():
    east = timezone(timedelta(hours=9))
    # 08:00 on the 7th in UTC+9 is 23:00 on the 6th in UTC.
    moment = datetime(2026, 12, 7, 8, 0, tzinfo=east)
    assert window("day", moment) == (at("2026-12-06"), at("2026-12-07"))
