"""A user's usage is the sum of their conversations' (``conversations.usage``)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from conversations.usage import user_usage


@pytest.mark.django_db
def test_user_usage_sums_the_counters_and_the_priced_costs_of_their_conversations():
    users = get_user_model().objects
    ann, ben = users.create_user("ann", password="pw-ann-1"), users.create_user("ben", password="x")
    assert user_usage(ann.pk) == (
        {
            "prompt": 0,
            "completion": 0,
            "total": 0,
            "cache_read": 0,
            "cache_write": 0,
            "reasoning": 0,
            "cost": None,
        },
        0,
    )
    counters = {"usage_prompt": 100, "usage_completion": 20, "usage_total": 120}
    Conversation.objects.create(owner=ann, usage_cache_read=60, cost=Decimal("0.25"), **counters)
    Conversation.objects.create(owner=ann, usage_reasoning=5, **counters)  # not priced
    Conversation.objects.create(owner=ben, cost=Decimal("9"), **counters)
    usage, count = user_usage(ann.pk)
    assert count == 2
    assert usage == {
        "prompt": 200,
        "completion": 40,
        "total": 240,
        "cache_read": 60,
        "cache_write": 0,
        "reasoning": 5,
        "cost": "0.25",
    }
