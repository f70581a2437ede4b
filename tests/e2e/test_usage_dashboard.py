"""The admin's usage dashboard in a real browser: its charts are drawn (SVG bars, one chart per
figure), the breakdown and range form work, axe finds nothing serious or critical, and nothing
is logged to the console or blocked by the Content-Security-Policy (one page load per check)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import Server
from .openai_setup import shell_json
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

# An operator's session and a few ledger rows over the last days.
SETUP_CODE = """
from datetime import timedelta
from decimal import Decimal
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.utils import timezone
from agents.models import UsageEntry
user, _ = get_user_model().objects.get_or_create(
    username="usage-operator", defaults={"is_staff": True, "is_superuser": True}
)
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
now = timezone.now()
for days, total, outcome in ((0, 900, "ok"), (1, 400, "ok"), (3, 50, "error")):
    UsageEntry.objects.create(
        user=user, kind="run", total=total, outcome=outcome, profile="usage-demo",
        model="demo/echo", cost=Decimal("0.02"), duration_ms=700,
        created=now - timedelta(days=days),
    )
print(json.dumps({"session": session.session_key}))
"""


@pytest.fixture
def operator(open_context: Callable[..., Any], server: Server) -> Page:
    rows = shell_json(server, SETUP_CODE)
    context = open_context(viewport={"width": 1280, "height": 800})
    context.add_cookies([{"name": server.cookie, "value": rows["session"], "url": server.url}])
    return context.new_page()


def test_the_dashboard_draws_its_charts_cleanly_and_breaks_down_by_profile(
    operator: Page,
) -> None:
    page = operator
    watched = Watched(page)
    assert watched.problems_at("/admin/usage/", "svg.usage-chart") == CLEAN
    charts = page.locator("svg.usage-chart")
    expect(charts).to_have_count(5)
    tokens = page.get_by_role("img", name="Tokens per day")
    expect(tokens).to_be_visible()
    # Drawn: the bars of days with usage have a height, and the chart has a size.
    heights = tokens.locator("rect.bar").evaluate_all(
        "(bars) => bars.map((bar) => bar.getBBox().height)"
    )
    assert len(heights) == 30 and sum(1 for height in heights if height > 0) >= 3
    box = tokens.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 100

    page.get_by_label("By").select_option("profile")
    page.get_by_role("button", name="Show").click()
    # The server is shared with the other browser tests: their runs are on other profiles.
    expect(page.locator("#usage-breakdown tbody th", has_text="usage-demo")).to_have_count(1)
    # The export takes the range and breakdown shown.
    expect(page.locator("#usage-csv")).to_have_attribute(
        "href", re.compile(r"^\?since=[-\d]+&until=[-\d]+&by=profile&format=csv$")
    )
