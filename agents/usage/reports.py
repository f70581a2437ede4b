"""Reading the ledger: a user's totals over a span, grouped by day, profile, model or key.

``parse_span`` reads ``since``/``until`` (ISO 8601 dates or date-times: a date starts at its
midnight, an ``until`` date includes its whole day; a date-time without an offset is UTC) and
answers field → message for what it cannot read, so a door refuses with ``400``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, get_args

from django.db.models import Count, Max, Q, QuerySet, Sum
from django.db.models.functions import TruncDate

from orkestrel.core import TokenUsage
from orkestrel.protocol import UsagePayload, usage_payload

from ..models import UsageEntry

__all__ = [
    "GROUPS",
    "Group",
    "GroupBy",
    "Span",
    "SpanError",
    "entries",
    "grouped",
    "parse_span",
    "total",
]

GroupBy = Literal["day", "profile", "model", "key"]
GROUPS: tuple[GroupBy, ...] = get_args(GroupBy)


class SpanError(ValueError):
    """A query parameter the ledger cannot be read by: ``errors`` maps it to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class Span:
    """Which rows to read: ``since`` (inclusive) to ``until`` (exclusive), each optional."""

    since: datetime | None = None
    until: datetime | None = None
    group_by: GroupBy | None = None


def _moment(value: str, *, end: bool) -> datetime:
    text = value.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    start = datetime.combine(day, time(), tzinfo=UTC)
    return start + timedelta(days=1) if end else start


def parse_span(params: Mapping[str, str]) -> Span:
    """The span ``params`` ask for (``SpanError`` naming each bad parameter)."""
    errors: dict[str, list[str]] = {}
    bounds: dict[str, datetime | None] = {"since": None, "until": None}
    for name in bounds:
        value = params.get(name)
        if value is None or value == "":
            continue
        try:
            bounds[name] = _moment(value, end=name == "until")
        except ValueError:
            errors[name] = [f"{value!r} is not an ISO 8601 date or date-time."]
    since, until = bounds["since"], bounds["until"]
    if since is not None and until is not None and until <= since:
        errors["until"] = ["until must be after since."]
    group_by = params.get("group_by")  # a blank one is no grouping the schema names: refused
    if group_by is not None and group_by not in GROUPS:
        errors["group_by"] = [f"{group_by!r} is not one of: {', '.join(GROUPS)}."]
    if errors:
        raise SpanError(errors)
    return Span(since, until, group_by)  # type: ignore[arg-type]


def entries(span: Span, user_id: int | None = None) -> QuerySet[UsageEntry]:
    """The ledger rows in ``span`` (of ``user_id`` when given; an operator reads them all)."""
    rows = UsageEntry.objects.order_by()
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    if span.since is not None:
        rows = rows.filter(created__gte=span.since)
    if span.until is not None:
        rows = rows.filter(created__lt=span.until)
    return rows


SUMS = {
    "prompt": Sum("prompt", default=0),
    "completion": Sum("completion", default=0),
    "total": Sum("total", default=0),
    "cache_read": Sum("cache_read", default=0),
    "cache_write": Sum("cache_write", default=0),
    "reasoning": Sum("reasoning", default=0),
    "cost": Sum("cost"),
}


def _payload(row: Mapping[str, Any]) -> UsagePayload:
    usage = TokenUsage(**{name: int(row[name] or 0) for name in SUMS if name != "cost"})
    return usage_payload(usage, row["cost"])


def total(rows: QuerySet[UsageEntry]) -> UsagePayload:
    """The rows' counters and cost summed (``cost`` ``None`` while no row was priced)."""
    return _payload(rows.aggregate(**SUMS))


@dataclass(frozen=True, slots=True)
class Group:
    """One group of rows: its key (``None``: no API key), label, usage, runs and errors."""

    key: str | None
    label: str
    usage: UsagePayload
    count: int
    errors: int


_COLUMN = {"profile": "profile", "model": "model", "key": "key_id"}


def grouped(rows: QuerySet[UsageEntry], by: GroupBy | str) -> list[Group]:
    """The rows summed per day (oldest first), profile, model or key (most tokens first).

    ``by`` may be any ledger column the admin's dashboard groups by (``user``); a key's label
    is its latest name (the rows keep it past the key's deletion).
    """
    column = "day" if by == "day" else _COLUMN.get(by, by)
    if by == "day":
        rows = rows.annotate(day=TruncDate("created", tzinfo=UTC))
    sums = rows.values(column).annotate(
        **SUMS,
        count=Count("id"),
        errors=Count("id", filter=Q(outcome="error")),
        label=Max("key_name") if by == "key" else Max(column),
    )
    ordered = sums.order_by(column) if by == "day" else sums.order_by("-total", column)
    found = []
    for row in ordered:
        value = row[column]
        key = value.isoformat() if isinstance(value, date) else value
        found.append(
            Group(
                key=str(key) if key is not None else None,
                label=str(row["label"] if row["label"] is not None else key or ""),
                usage=_payload(row),
                count=row["count"],
                errors=row["errors"],
            )
        )
    return found
