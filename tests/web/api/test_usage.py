"""``GET /api/usage/``: the caller's usage and cost over their conversations."""

from __future__ import annotations

from decimal import Decimal

from conversations.models import Conversation


def test_usage_sums_the_callers_conversations_and_no_one_elses(api, alice, bob):
    Conversation.objects.create(owner=alice, usage_prompt=7, usage_total=7, cost=Decimal("0.5"))
    Conversation.objects.create(owner=bob, usage_prompt=100, usage_total=100)
    body = api.get("/api/usage/").json()
    assert body["conversations"] == 1
    assert body["usage"]["prompt"] == 7 and body["usage"]["cost"] == "0.5"
