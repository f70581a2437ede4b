"""The admin's usage dashboard: staff only, charts drawn as SVG, a breakdown, CSV export."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from agents.models import UsageEntry


@pytest.fixture
def ledger(db):
    users = get_user_model().objects
    ada = users.create_user("ada", password="pw-ada-123")
    bob = users.create_user("bob", password="pw-bob-123")
    Group.objects.create(name="team").user_set.add(ada)
    now = timezone.now()
    UsageEntry.objects.create(
        user=ada,
        kind="run",
        total=300,
        cost=Decimal("0.5"),
        profile="demo",
        duration_ms=1200,
        created=now,
    )
    UsageEntry.objects.create(
        user=bob,
        kind="job",
        total=100,
        outcome="error",
        profile="writer",
        duration_ms=800,
        created=now - timedelta(days=2),
    )
    UsageEntry.objects.create(
        user=ada, kind="summary", total=50, profile="demo", created=now - timedelta(days=60)
    )


@pytest.fixture
def staff(client, db):
    operator = get_user_model().objects.create_user("op", password="pw-op-123", is_staff=True)
    client.force_login(operator)
    return client


def test_a_non_staff_user_is_sent_to_the_admin_login(client, ledger):
    ada = get_user_model().objects.get(username="ada")
    client.force_login(ada)
    response = client.get("/admin/usage/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_page_draws_a_chart_per_figure_and_breaks_down_by_user(staff, ledger):
    page = staff.get("/admin/usage/").content.decode()
    assert page.count('<svg class="usage-chart" role="img"') == 5
    assert "<title>Tokens per day</title>" in page and 'class="bar tokens"' in page
    # The last 30 days: the summary 60 days ago is out of range.
    assert "<strong>400</strong> tokens" in page and "<strong>2</strong> runs" in page
    assert "<strong>1</strong> errors" in page
    assert '<th scope="row">ada</th><td>300</td><td>$0.5000</td>' in page
    by_group = staff.get("/admin/usage/?by=group").content.decode()
    assert '<th scope="row">team</th>' in by_group and "(no group)" in by_group


def test_the_range_is_chosen_and_a_bad_date_says_so(staff, ledger):
    since = (timezone.now() - timedelta(days=90)).date().isoformat()
    page = staff.get(f"/admin/usage/?since={since}").content.decode()
    assert "<strong>450</strong> tokens" in page
    wrong = staff.get("/admin/usage/?since=someday").content.decode()
    assert "is not a date" in wrong


def test_the_csv_has_each_day_and_each_group(staff, ledger):
    response = staff.get("/admin/usage/?by=profile&format=csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == [
        "scope",
        "key",
        "tokens",
        "prompt",
        "completion",
        "cost_usd",
        "runs",
        "errors",
        "latency_ms",
    ]
    days = [row for row in rows if row[0] == "day"]
    assert len(days) == 30 and sum(int(row[2]) for row in days) == 400
    profiles = {row[1]: row for row in rows if row[0] == "profile"}
    assert profiles["demo"][2:] == ["300", "0", "0", "0.5", "1", "0", "1200"]
    assert profiles["writer"][6:] == ["1", "1", "800"]
