"""The dashboard's figures from the ledger: per day (every day of the span, empty ones too) and
per user, group, profile, model or API key; runs and jobs count as runs, summaries do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, timedelta
from decimal import Decimal
from typing import Any, Literal, get_args

from django.db.models import Avg, Count, F, Q, QuerySet, Sum
from django.db.models.functions import TruncDate

from ..models import UsageEntry

__all__ = ["BREAKDOWNS", "Breakdown", "Figures", "by_day", "by_dimension"]

Breakdown = Literal["user", "group", "profile", "model", "key"]
BREAKDOWNS: tuple[Breakdown, ...] = get_args(Breakdown)

_WORK = ~Q(kind="summary")
_FIGURES: dict[str, Any] = {
    "tokens": Sum("total", default=0),
    "prompt": Sum("prompt", default=0),
    "completion": Sum("completion", default=0),
    "cost": Sum("cost"),
    "runs": Count("id", filter=_WORK),
    "errors": Count("id", filter=Q(outcome="error")),
    "latency": Avg("duration_ms", filter=_WORK),
}
_COLUMNS: dict[Breakdown, Any] = {
    "user": F("user__username"),
    "group": F("user__groups__name"),
    "profile": F("profile"),
    "model": F("model"),
    "key": F("key_name"),
}


@dataclass(frozen=True, slots=True)
class Figures:
    """What one day or one group spent and how it went."""

    label: str
    tokens: int = 0
    prompt: int = 0
    completion: int = 0
    cost: Decimal | None = None
    runs: int = 0
    errors: int = 0
    latency_ms: float | None = None

    @classmethod
    def of(cls, label: str, row: Mapping[str, Any]) -> Figures:
        return cls(
            label=label,
            tokens=int(row["tokens"] or 0),
            prompt=int(row["prompt"] or 0),
            completion=int(row["completion"] or 0),
            cost=row["cost"],
            runs=row["runs"],
            errors=row["errors"],
            latency_ms=float(row["latency"]) if row["latency"] is not None else None,
        )


def by_day(rows: QuerySet[UsageEntry], first: date, last: date) -> list[Figures]:
    """One ``Figures`` per day from ``first`` to ``last`` (UTC), oldest first."""
    found = {
        row["day"]: row
        for row in rows.annotate(day=TruncDate("created", tzinfo=UTC))
        .values("day")
        .annotate(**_FIGURES)
        .order_by("day")
    }
    days = []
    day = first
    while day <= last:
        row = found.get(day)
        days.append(Figures.of(day.isoformat(), row) if row else Figures(day.isoformat()))
        day += timedelta(days=1)
    return days


def by_dimension(rows: QuerySet[UsageEntry], by: Breakdown) -> list[Figures]:
    """One ``Figures`` per user, group (a member's row counts in each of their groups),
    profile, model or key; most tokens first."""
    sums = rows.values(name=_COLUMNS[by]).annotate(**_FIGURES)
    sums = sums.order_by("-tokens", "name")  # type: ignore[misc]  # an annotation
    none = {"user": "(deleted user)", "group": "(no group)", "key": "(no key: the browser)"}
    return [
        Figures.of(str(row["name"]) if row["name"] else none.get(by, "(none)"), row) for row in sums
    ]
