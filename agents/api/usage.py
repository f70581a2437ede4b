"""``/api/usage/``: what the user spent, from the usage ledger (runs, jobs and summaries), over
a span and grouped; and where each quota that applies to them stands."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Conversation

from ..usage.charge import current_key
from ..usage.quotas import Standing, standings
from ..usage.reports import GROUPS, SpanError, entries, grouped, parse_span, total
from . import examples
from .base import JsonErrors, user_id
from .usage_serializers import LedgerUsageSerializer

__all__ = ["UsageView"]

_DATE = (
    "An ISO 8601 date (`2026-12-01`) or date-time (`2026-12-01T09:00:00Z`; UTC without an offset)."
)

PARAMETERS = [
    OpenApiParameter("since", str, description=f"From (inclusive). {_DATE}"),
    OpenApiParameter(
        "until", str, description=f"Up to (exclusive; a date includes its whole day). {_DATE}"
    ),
    OpenApiParameter(
        "group_by", str, enum=list(GROUPS), description="Sum per day (UTC), profile, model or key."
    ),
]

_QUOTA = {
    "subject": "user",
    "name": "alice",
    "period": "month",
    "action": "block",
    "limit": {"tokens": 1000000, "cost": "20"},
    "used": {"tokens": 57330, "cost": "0.1842"},
    "remaining": {"tokens": 942670, "cost": "19.8158"},
    "resets_at": "2027-01-01T00:00:00Z",
}
ALL_TIME = examples.example(
    "Your usage, all time",
    {**examples.USER_USAGE.value, "since": None, "until": None, "quotas": []},
)
GROUPED = examples.example(
    "Your usage this month, per model",
    {
        **examples.USER_USAGE.value,
        "since": "2026-12-01T00:00:00Z",
        "until": None,
        "groups": [{"key": "openai/gpt-4o-mini", "usage": examples.USER_USAGE.value["usage"]}],
        "quotas": [_QUOTA],
    },
)
BAD_SPAN = examples.invalid(
    "A date the API cannot read", since=["'yesterday' is not an ISO 8601 date or date-time."]
)


def _money(value: Decimal | None) -> str | None:
    return format(value.normalize(), "f") if value is not None else None


def quota_payload(standing: Standing) -> dict[str, Any]:
    """A quota's standing as ``/api/usage/`` lists it."""
    return {
        "subject": standing.subject,
        "name": standing.name,
        "period": standing.period,
        "action": standing.action,
        "limit": {"tokens": standing.max_tokens, "cost": _money(standing.max_cost)},
        "used": {"tokens": standing.used_tokens, "cost": _money(standing.used_cost)},
        "remaining": {
            "tokens": standing.remaining_tokens,
            "cost": _money(standing.remaining_cost),
        },
        "resets_at": standing.resets_at,
    }


class UsageView(JsonErrors):
    """The user's usage from the ledger, and their quotas."""

    @extend_schema(
        summary="Your usage and cost (runs, jobs, summaries), and what your quotas leave",
        parameters=PARAMETERS,
        responses={
            200: examples.answer(LedgerUsageSerializer, ALL_TIME, GROUPED),
            **examples.refusals(BAD_SPAN),
        },
    )
    def get(self, request: Request) -> Response:
        try:
            span = parse_span(request.query_params)
        except SpanError as error:
            raise exceptions.ValidationError(error.errors) from None
        user = user_id(request)
        rows = entries(span, user)
        key = current_key()
        body: dict[str, Any] = {
            "usage": total(rows),
            "conversations": Conversation.objects.filter(owner_id=user).count(),
            "since": span.since,
            "until": span.until,
        }
        if span.group_by is not None:
            body["groups"] = [
                {"key": group.key, "usage": group.usage}
                | ({"name": group.label} if span.group_by == "key" else {})
                for group in grouped(rows, span.group_by)
            ]
        # A key sees its own quotas beside its user's; the browser sees every key's.
        found = standings(
            user, key.id if key is not None else None, timezone.now(), every_key=key is None
        )
        body["quotas"] = [quota_payload(standing) for standing in found]
        return Response(LedgerUsageSerializer(body).data)
