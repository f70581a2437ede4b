"""Compaction spends tokens like an answer: the summarizer's usage joins the conversation's."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents.runtime.summarizer import make_summarizer
from agents.runtime.usage import UsageRecorder
from conversations.models import Conversation
from orkestrel.core import Message, TokenUsage
from orkestrel.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_summary_usage_and_its_cost_are_added_to_the_conversation():
    user = await sync_to_async(get_user_model().objects.create_user)("sam", password="pw-sam-1")
    conversation = await sync_to_async(Conversation.objects.create)(
        owner=user, usage_prompt=10, usage_completion=5, usage_total=15
    )
    provider = ScriptedProvider(
        [{"content": " The recap. ", "usage": {"prompt": 400, "completion": 100, "total": 500}}]
    )
    recorder = UsageRecorder(str(conversation.pk), {"input": 1, "output": 4})
    summarize = make_summarizer(provider, usage=recorder)
    assert await summarize([Message("m1", "user", "hello")]) == "The recap."
    stored = await sync_to_async(Conversation.objects.get)(pk=conversation.pk)
    assert stored.token_usage() == TokenUsage(410, 105, 515)
    # 400 in at $1 and 100 out at $4 per million; the meter is the answers' to set, not its.
    assert str(stored.cost.normalize()) == "0.0008"
    assert stored.context_tokens is None
