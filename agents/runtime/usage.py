"""Usage written to a conversation: its counters, its cost at the model's prices, the meter."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import F, Value
from django.db.models.functions import Coalesce

from conversations.models import Conversation
from orkestrel.core import TokenUsage

from ..models.prices import Prices, usage_cost
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


@dataclass(frozen=True, slots=True)
class UsageRecorder:
    """Adds usage to one conversation's counters, priced by the model that ran."""

    conversation_id: str
    prices: Prices | None

    @classmethod
    def for_spec(cls, spec: RuntimeSpec) -> UsageRecorder:
        return cls(spec.conversation_id, spec.endpoint.price_of(spec.model_name))

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
        fields: dict[str, Any] = {
            name: F(name) + value for name, value in usage_columns(usage).items() if value
        }
        cost = self.cost(usage)
        if cost is not None:
            # Null until a priced call: no price is an unknown cost, not a free one.
            fields["cost"] = Coalesce(F("cost"), Value(Decimal(0))) + cost
        if sections is not None and usage.latest_prompt:
            fields.update(context_tokens=usage.latest_prompt, context_sections=sections)
        if fields:
            Conversation.objects.filter(id=self.conversation_id).update(**fields)
        return cost
