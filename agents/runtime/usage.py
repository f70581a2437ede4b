"""Usage written to a conversation: its counters, its cost at the model's prices, the meter."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction

from conversations.models import Conversation
from orkestrel.core import TokenUsage
from orkestrel.statements import Names, Query, prep

from ..models.prices import Prices, usage_cost
from ..usage.charge import KeyRef
from ..usage.ledger import Charge, record
from .spec import RuntimeSpec

__all__ = ["UsageRecorder", "usage_columns"]


def usage_columns(usage: TokenUsage) -> dict[str, int]:
    """The ``usage_*`` columns of a ``Conversation`` or ``Run`` row, as values."""
    return {
        "usage_prompt": usage.prompt,
        "usage_completion": usage.completion,
        "usage_total": usage.total,
        "usage_cache_read": usage.cache_read,
        "usage_cache_write": usage.cache_write,
        "usage_reasoning": usage.reasoning,
    }


def _add_sql(n: Names, priced: bool, meter: bool) -> str:
    # Added in the statement, not read and written back: safe beside concurrent adds.
    sets = [f"{n.quote(name)} = {n.quote(name)} + %s" for name in _USAGE]
    if priced:
        # Null until a priced call: no price is an unknown cost, not a free one.
        sets.append(
            f"{n.column(Conversation, 'cost')} = COALESCE({n.column(Conversation, 'cost')}, 0) + %s"
        )
    if meter:
        sets += [
            f"{n.column(Conversation, 'context_tokens')} = %s",
            f"{n.column(Conversation, 'context_sections')} = %s",
        ]
    return (
        f"UPDATE {n.table(Conversation)} SET {', '.join(sets)} "
        f"WHERE {n.column(Conversation, 'id')} = %s"
    )


_USAGE = tuple(usage_columns(TokenUsage()))


def _add_query(priced: bool, meter: bool) -> Query:
    return Query(lambda n: _add_sql(n, priced, meter))


_ADD = {
    (priced, meter): _add_query(priced, meter)
    for priced in (False, True)
    for meter in (False, True)
}


@dataclass(frozen=True, slots=True)
class UsageRecorder:
    """Adds usage to one conversation's counters, priced by the model that ran; with a
    ``charge``, summaries are written to the usage ledger too."""

    conversation_id: str
    prices: Prices | None
    charge: Charge | None = None

    @classmethod
    def for_spec(cls, spec: RuntimeSpec, key: KeyRef | None = None) -> UsageRecorder:
        """The recorder of a session of ``spec``, its work charged to ``key`` (if any)."""
        charge = Charge(
            spec.user_id, key, spec.profile.slug, f"{spec.endpoint.name}/{spec.model_name}"
        )
        return cls(spec.conversation_id, spec.endpoint.price_of(spec.model_name), charge)

    def cost(self, usage: TokenUsage | None) -> Decimal | None:
        """What ``usage`` cost (``None``: the model has no price)."""
        return usage_cost(usage, self.prices)

    def cost_after(self, stored: Decimal | None, usage: TokenUsage | None) -> Decimal | None:
        """A stored cost once ``usage`` joins it (``None`` while neither was priced)."""
        cost = self.cost(usage)
        if cost is None or stored is None:
            return stored if cost is None else cost
        return stored + cost

    def add(self, usage: TokenUsage, sections: int | None = None) -> Decimal | None:
        """Add ``usage`` (one statement, safe beside concurrent adds); its cost.

        With ``sections`` (the conversation's section count at the call) the latest call's
        prompt becomes the context meter's reading.
        """
        cost = self.cost(usage)
        meter = sections is not None and bool(usage.latest_prompt)
        params: list[Any] = list(usage_columns(usage).values())
        if cost is not None:
            params.append(prep(Conversation, "cost", cost))
        if meter:
            params += [usage.latest_prompt, sections]
        params.append(prep(Conversation, "id", self.conversation_id))
        _ADD[cost is not None, meter].execute(params)
        return cost

    def add_summary(self, usage: TokenUsage) -> None:
        """A summary's usage: the conversation's counters, and a ``summary`` ledger row (one
        transaction: the account never disagrees with the conversation)."""
        with transaction.atomic():
            cost = self.add(usage)
            if self.charge is not None:
                record(self.charge, "summary", usage, cost, source=self.conversation_id)
