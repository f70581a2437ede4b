"""Quotas against the ledger, each subject and period, judged with an injected clock.

``standings`` reads the quotas that apply to a user (their own, their groups', their key's) with
the use of the current period; ``judge`` refuses while a blocking one is used up and warns past
a warning one; a new period (the reset) starts from zero.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from agents.models import ApiKey, Quota, UsageEntry
from agents.usage.enforcement import QuotaExceeded, judge
from agents.usage.quotas import any_apply, standings

NOW = datetime(2026, 12, 9, 12, 0, tzinfo=UTC)  # a Wednesday


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="pw-bob-123")


def spend(user, total: int, *, at: datetime = NOW, key: ApiKey | None = None, cost=None):
    UsageEntry.objects.create(
        user=user,
        kind="run",
        total=total,
        cost=cost,
        key_id=key.pk if key else None,
        key_name=key.name if key else "",
        created=at,
    )


def test_a_users_daily_token_quota_blocks_once_used_and_resets_at_midnight(ada, bob):
    Quota.objects.create(user=ada, period="day", max_tokens=100)
    spend(ada, 60, at=NOW - timedelta(hours=3))
    spend(ada, 500, at=NOW - timedelta(days=1))  # yesterday's: another period
    spend(bob, 1000)  # someone else's
    (standing,) = standings(ada.pk, None, NOW)
    assert (standing.used_tokens, standing.remaining_tokens) == (60, 40)
    assert judge([standing], NOW) == []
    spend(ada, 40)
    with pytest.raises(QuotaExceeded) as refused:
        judge(standings(ada.pk, None, NOW), NOW)
    assert refused.value.code == "quota_exceeded" and refused.value.status_code == 429
    assert refused.value.resets_at == datetime(2026, 12, 10, tzinfo=UTC)
    assert refused.value.retry_after == 12 * 3600
    assert str(refused.value) == "Your daily quota is used up; it resets at 2026-12-10 00:00 UTC."
    # The reset: the next day starts from nothing.
    tomorrow = NOW + timedelta(days=1)
    assert judge(standings(ada.pk, None, tomorrow), tomorrow) == []


def test_a_groups_weekly_cost_quota_counts_its_members_together(ada, bob):
    team = Group.objects.create(name="team")
    team.user_set.add(ada, bob)
    Quota.objects.create(group=team, period="week", max_cost=Decimal("1.00"))
    spend(ada, 10, cost=Decimal("0.40"), at=NOW - timedelta(days=2))  # Monday: this week
    spend(bob, 10, cost=Decimal("0.60"))
    spend(bob, 10, cost=Decimal("5"), at=NOW - timedelta(days=3))  # last Sunday: last week
    (standing,) = standings(ada.pk, None, NOW)
    assert standing.subject == "group" and standing.name == "team"
    assert standing.used_cost == Decimal("1.00") and standing.remaining_cost == 0
    with pytest.raises(QuotaExceeded) as refused:
        judge([standing], NOW)
    assert str(refused.value).startswith("The weekly quota of group 'team' is used up")
    assert refused.value.resets_at == datetime(2026, 12, 14, tzinfo=UTC)
    # A user outside the group is not held to it.
    carol = get_user_model().objects.create_user("carol", password="pw-carol-123")
    assert standings(carol.pk, None, NOW) == []


def test_a_keys_monthly_quota_counts_only_that_keys_work(ada):
    key, _ = ApiKey.objects.issue(user=ada, name="ci")
    other, _ = ApiKey.objects.issue(user=ada, name="laptop")
    Quota.objects.create(api_key=key, period="month", max_tokens=50)
    spend(ada, 50, key=key, at=datetime(2026, 12, 1, tzinfo=UTC))
    spend(ada, 900, key=other)
    spend(ada, 900)
    # Only a start through the key is held to it.
    assert standings(ada.pk, other.pk, NOW) == []
    (standing,) = standings(ada.pk, key.pk, NOW)
    assert standing.used_tokens == 50 and standing.subject == "key"
    with pytest.raises(QuotaExceeded) as refused:
        judge([standing], NOW)
    assert refused.value.resets_at == datetime(2027, 1, 1, tzinfo=UTC)
    # The key's rows still count once it is revoked (the ledger keeps its id).
    ApiKey.objects.filter(pk=key.pk).revoke()
    assert standings(ada.pk, key.pk, NOW)[0].used_tokens == 50
    new_month = datetime(2027, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert judge(standings(ada.pk, key.pk, new_month), new_month) == []


def test_a_warning_quota_lets_the_start_go_on_and_a_block_waits_for_the_last_reset(ada):
    Quota.objects.create(user=ada, period="day", max_tokens=10, action="warn")
    spend(ada, 10)
    (warning,) = judge(standings(ada.pk, None, NOW), NOW)
    assert "Your daily quota is used up" in warning.message and "goes on" in warning.message
    Quota.objects.create(user=ada, period="week", max_tokens=5)
    Quota.objects.create(user=ada, period="month", max_tokens=5)
    with pytest.raises(QuotaExceeded) as refused:
        judge(standings(ada.pk, None, NOW), NOW)
    assert refused.value.resets_at == datetime(2027, 1, 1, tzinfo=UTC)


def test_the_start_paths_check_finds_exactly_the_quotas_standings_reads(ada, bob):
    """``any_apply`` (fixed SQL, asked by every start) agrees with ``standings`` (the ORM)."""
    key, _ = ApiKey.objects.issue(user=ada, name="ci")
    team = Group.objects.create(name="team")
    cases = [
        ("nothing", lambda: None),
        ("user", lambda: Quota.objects.create(user=ada, max_tokens=1)),
        ("group", lambda: (team.user_set.add(ada), Quota.objects.create(group=team, max_tokens=1))),
        ("key", lambda: Quota.objects.create(api_key=key, max_tokens=1)),
    ]
    for name, setup in cases:
        Quota.objects.all().delete()
        setup()
        for user, key_id in ((ada, None), (ada, key.pk), (bob, None), (bob, key.pk)):
            expected = bool(standings(user.pk, key_id, NOW))
            assert any_apply(user.pk, key_id) is expected, (name, user, key_id)
