"""``orkestrel.cron``: when a five-field cron is next due, in its time zone, from a given now."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orkestrel.cron import CronError, next_due, previous_due, validate_cron


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_a_weekday_morning_is_read_in_the_schedules_time_zone():
    # Friday 3 July 2026, 09:59 in Lisbon (summer time, UTC+1): next is Monday 09:00 there.
    assert next_due("0 9 * * 1-5", "Europe/Lisbon", at(2026, 7, 3, 8, 59)) == at(2026, 7, 6, 8)


def test_the_same_local_hour_holds_across_a_change_to_summer_time():
    before = next_due("0 9 * * *", "America/New_York", at(2026, 3, 7, 20))
    after = next_due("0 9 * * *", "America/New_York", at(2026, 3, 8, 20))
    assert before == at(2026, 3, 8, 13)  # 09:00 EDT, the first day of summer time
    assert after == at(2026, 3, 9, 13)


def test_next_is_strictly_after_and_previous_counts_a_moment_on_time():
    assert next_due("30 3 * * *", "UTC", at(2026, 3, 8, 3, 30)) == at(2026, 3, 9, 3, 30)
    assert previous_due("30 3 * * *", "UTC", at(2026, 3, 8, 3, 30)) == at(2026, 3, 8, 3, 30)
    assert previous_due("30 3 * * *", "UTC", at(2026, 3, 8, 3, 29)) == at(2026, 3, 7, 3, 30)


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("* * *", "has 3 fields"),
        ("0 0 8 * * 1", "has 6 fields"),
        ("61 * * * *", "not a valid cron expression"),
        ("@daily", "has 1 fields"),
    ],
)
def test_a_wrong_expression_says_what_is_wrong(expression, says):
    with pytest.raises(CronError, match=says):
        validate_cron(expression)


def test_an_unknown_time_zone_and_a_naive_moment_are_refused():
    with pytest.raises(CronError, match="not a time zone"):
        next_due("0 9 * * *", "Mars/Olympus", at(2026, 1, 1))
    with pytest.raises(CronError, match="ambiguous"):
        next_due("0 9 * * *", "UTC", datetime(2026, 1, 1))


def test_spaces_are_tidied():
    assert validate_cron("  0   9 *  * 1-5 ") == "0 9 * * 1-5"
