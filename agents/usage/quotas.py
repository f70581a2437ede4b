"""Where a user stands against the quotas that apply to them, read in one query.

A quota applies to a start when it names the user, one of their groups (its members' usage
counts together) or the API key the start came with. ``standings`` reads every such quota with
what was used in its current period, summed from the ledger in correlated subqueries over the
``(user, created)`` and ``(key_id, created)`` indexes: one round trip, whatever the count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal, cast

from django.contrib.auth import get_user_model
from django.db.models import (
    Case,
    DateTimeField,
    DecimalField,
    F,
    Func,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from orkestrel.statements import Names, Query

from ..models import Quota, UsageEntry
from ..models.usage import COST_DIGITS, COST_PLACES
from .periods import Period, window

__all__ = ["Standing", "Subject", "any_apply", "standings"]

Subject = Literal["user", "group", "key"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """One quota, and what its subject used of it this period."""

    quota_id: int
    subject: Subject
    name: str
    period: Period
    action: Literal["block", "warn"]
    max_tokens: int | None
    max_cost: Decimal | None
    used_tokens: int
    used_cost: Decimal
    resets_at: datetime

    @property
    def reached(self) -> bool:
        """Whether a limit is used up (a start now would go over it)."""
        tokens = self.max_tokens is not None and self.used_tokens >= self.max_tokens
        cost = self.max_cost is not None and self.used_cost >= self.max_cost
        return tokens or cost

    @property
    def remaining_tokens(self) -> int | None:
        return None if self.max_tokens is None else max(0, self.max_tokens - self.used_tokens)

    @property
    def remaining_cost(self) -> Decimal | None:
        return None if self.max_cost is None else max(Decimal(0), self.max_cost - self.used_cost)

    def describe(self) -> str:
        """The quota as a person reads it: ``your daily quota``, ``the monthly quota of
        group 'team'``."""
        adjective = {"day": "daily", "week": "weekly", "month": "monthly"}[self.period]
        if self.subject == "user":
            return f"your {adjective} quota"
        owner = "API key" if self.subject == "key" else "group"
        return f"the {adjective} quota of {owner} {self.name!r}"


def _applies_sql(n: Names) -> str:
    groups = get_user_model().groups.through
    return (
        f"SELECT 1 FROM {n.table(Quota)} WHERE {n.column(Quota, 'user')} = %s "
        f"OR {n.column(Quota, 'api_key')} = %s OR {n.column(Quota, 'group')} IN "
        f"(SELECT {n.column(groups, 'group')} FROM {n.table(groups)} "
        f"WHERE {n.column(groups, 'user')} = %s)"
    )


# Every start asks it, and almost always no quota applies: fixed SQL, not the ORM's compile
# (``orkestrel.statements``), and the standings' query only when one does.
_APPLIES = Query(lambda n: f"{_applies_sql(n)} LIMIT 1")


def any_apply(user_id: int, key_id: int | None) -> bool:
    """Whether any quota applies to a start of ``user_id`` through ``key_id`` (one cheap
    statement: the start path asks it every time)."""
    return bool(_APPLIES.rows([user_id, key_id, user_id]))


def _sum(column: str) -> Func:
    return Func(F(column), function="SUM")


def standings(
    user_id: int, key_id: int | None, now: datetime, *, every_key: bool = False
) -> list[Standing]:
    """The quotas of ``user_id``, their groups and ``key_id`` (with ``every_key``: of every key
    of the user's), with their use this period as of ``now``; one query."""
    starts = {period: window(period, now)[0] for period in ("day", "week", "month")}
    memberships = get_user_model().groups.through.objects
    groups = memberships.filter(user_id=user_id).values("group_id")
    applies = Q(user_id=user_id) | Q(group_id__in=groups)
    if every_key:
        applies |= Q(api_key__user_id=user_id)
    elif key_id is not None:
        applies |= Q(api_key_id=key_id)
    members = memberships.filter(group_id=OuterRef(OuterRef("group_id"))).values("user_id")
    spent = UsageEntry.objects.filter(
        Q(user_id=OuterRef("user_id")) | Q(key_id=OuterRef("api_key_id")) | Q(user_id__in=members),
        created__gte=OuterRef("since"),
    ).order_by()
    money = DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES)
    rows = (
        Quota.objects.filter(applies)
        .select_related("user", "group", "api_key")
        .annotate(
            since=Case(
                *(When(period=period, then=Value(start)) for period, start in starts.items()),
                output_field=DateTimeField(),
            ),
        )
        .annotate(
            used_tokens=Coalesce(Subquery(spent.values(s=_sum("total"))[:1]), 0),
            used_cost=Coalesce(
                Subquery(spent.values(s=_sum("cost"))[:1], output_field=money),
                Value(Decimal(0)),
                output_field=money,
            ),
        )
    )
    found = []
    for row in rows:
        subject: Subject = "user" if row.user_id else "group" if row.group_id else "key"
        name = (
            row.user.get_username()
            if row.user is not None
            else row.group.name
            if row.group is not None
            else row.api_key.name
            if row.api_key is not None
            else ""
        )
        period = cast(Period, row.period)
        found.append(
            Standing(
                quota_id=row.pk,
                subject=subject,
                name=name,
                period=period,
                action=cast(Literal["block", "warn"], row.action),
                max_tokens=row.max_tokens,
                max_cost=row.max_cost,
                used_tokens=int(row.used_tokens),
                used_cost=Decimal(row.used_cost),
                resets_at=window(period, now)[1],
            )
        )
    return found
