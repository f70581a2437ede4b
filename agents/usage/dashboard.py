"""The admin's usage dashboard (``/admin/usage/``): tokens, cost, runs, errors and latency per
day as charts, a breakdown by user, group, profile, model or API key, over a date range; the
same figures as CSV (``?format=csv``).

Staff only (``admin.site.admin_view``). The range is ``since``..``until`` (ISO dates, UTC, both
included; the last 30 days by default, at most ``MAX_DAYS``).
"""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from .chart import Bar, bar_chart
from .reports import Span, entries
from .series import BREAKDOWNS, Breakdown, Figures, by_day, by_dimension

__all__ = ["DEFAULT_DAYS", "MAX_DAYS", "usage_dashboard"]

DEFAULT_DAYS = 30
MAX_DAYS = 366


def _day(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _range(request: HttpRequest) -> tuple[date, date, list[str]]:
    """The days asked for (a bad one falls back to the default, and says so)."""
    today = timezone.now().astimezone(UTC).date()
    problems = []
    last = _day(request.GET.get("until"))
    if request.GET.get("until") and last is None:
        problems.append("“until” is not a date (YYYY-MM-DD): showing up to today.")
    last = last or today
    first = _day(request.GET.get("since"))
    if request.GET.get("since") and first is None:
        problems.append("“since” is not a date (YYYY-MM-DD): showing 30 days.")
    first = first or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        problems.append("“since” is after “until”: swapped.")
        first, last = last, first
    if (last - first).days >= MAX_DAYS:
        problems.append(f"At most {MAX_DAYS} days at once: showing the last {MAX_DAYS}.")
        first = last - timedelta(days=MAX_DAYS - 1)
    return first, last, problems


def _money(figures: Figures) -> str:
    return f"${figures.cost:.4f}" if figures.cost is not None else "—"


def _latency(figures: Figures) -> str:
    return f"{figures.latency_ms / 1000:.2f} s" if figures.latency_ms is not None else "—"


def _row(figures: Figures) -> dict[str, Any]:
    """A table row's cells, as people read them."""
    return {
        "label": figures.label,
        "tokens": f"{figures.tokens:,}",
        "cost": _money(figures),
        "runs": figures.runs,
        "errors": figures.errors,
        "latency": _latency(figures),
    }


def _charts(days: list[Figures]) -> list[dict[str, Any]]:
    metrics = [
        ("Tokens", "tokens", lambda f: float(f.tokens), lambda f: f"{f.tokens:,} tokens"),
        ("Cost (USD)", "cost", lambda f: float(f.cost or 0), _money),
        ("Runs", "runs", lambda f: float(f.runs), lambda f: f"{f.runs} runs"),
        ("Errors", "errors", lambda f: float(f.errors), lambda f: f"{f.errors} errors"),
        ("Latency (mean)", "latency", lambda f: (f.latency_ms or 0) / 1000, _latency),
    ]
    return [
        {
            "name": name,
            "svg": bar_chart(
                f"{name} per day", [Bar(f.label, value(f), text(f)) for f in days], css
            ),
        }
        for name, css, value, text in metrics
    ]


def _csv(days: list[Figures], groups: list[Figures], by: Breakdown) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="usage.csv"'
    writer = csv.writer(response)
    header = ["tokens", "prompt", "completion", "cost_usd", "runs", "errors", "latency_ms"]
    writer.writerow(["scope", "key", *header])
    for scope, rows in (("day", days), (by, groups)):
        for f in rows:
            writer.writerow(
                [
                    scope,
                    f.label,
                    f.tokens,
                    f.prompt,
                    f.completion,
                    format(f.cost.normalize(), "f") if f.cost is not None else "",
                    f.runs,
                    f.errors,
                    f"{f.latency_ms:.0f}" if f.latency_ms is not None else "",
                ]
            )
    return response


def _dashboard(request: HttpRequest) -> HttpResponse:
    first, last, problems = _range(request)
    by: Breakdown = request.GET.get("by", "user")  # type: ignore[assignment]
    if by not in BREAKDOWNS:
        by = "user"
    span = Span(
        datetime.combine(first, datetime.min.time(), tzinfo=UTC),
        datetime.combine(last + timedelta(days=1), datetime.min.time(), tzinfo=UTC),
    )
    rows = entries(span)
    days = by_day(rows, first, last)
    groups = by_dimension(rows, by)
    if request.GET.get("format") == "csv":
        return _csv(days, groups, by)
    costs = [f.cost for f in days if f.cost is not None]
    totals = Figures(
        "total",
        tokens=sum(f.tokens for f in days),
        cost=sum(costs, Decimal(0)) if costs else None,
        runs=sum(f.runs for f in days),
        errors=sum(f.errors for f in days),
    )
    query = request.GET.copy()
    query["format"] = "csv"
    context = {
        **admin.site.each_context(request),
        "title": "Usage",
        "since": first.isoformat(),
        "until": last.isoformat(),
        "by": by,
        "breakdowns": BREAKDOWNS,
        "problems": problems,
        "charts": _charts(days),
        "totals": _row(totals),
        "groups": [_row(f) for f in groups],
        "days": [_row(f) for f in days],
        "csv_query": query.urlencode(),
    }
    return TemplateResponse(request, "admin/usage_dashboard.html", context)


usage_dashboard = admin.site.admin_view(_dashboard)
"""The dashboard as a view: staff only, the admin's login otherwise."""
