"""A user's usage: the sum over their conversations (every run and summary they paid for)."""

from __future__ import annotations

from django.db.models import Count, Sum

from orkestrel.core import TokenUsage
from orkestrel.protocol import UsagePayload, usage_payload

from .models import Conversation

__all__ = ["user_usage"]


def user_usage(user_id: int | None) -> tuple[UsagePayload, int]:
    """The user's usage counters and cost (``None`` while no call was priced), and how many
    conversations they hold; one query."""
    sums = Conversation.objects.filter(owner_id=user_id).aggregate(
        prompt=Sum("usage_prompt", default=0),
        completion=Sum("usage_completion", default=0),
        total=Sum("usage_total", default=0),
        cache_read=Sum("usage_cache_read", default=0),
        cache_write=Sum("usage_cache_write", default=0),
        reasoning=Sum("usage_reasoning", default=0),
        cost=Sum("cost"),
        conversations=Count("id"),
    )
    count = sums.pop("conversations")
    cost = sums.pop("cost")
    return usage_payload(TokenUsage(**sums), cost), count
