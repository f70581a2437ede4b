"""Tool messages store their outcome; old rows get theirs from the records they had."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model

from conversations.models import AuthorityDecision, Conversation, Message, ToolFailure
from conversations.stores import DjangoConversationStore

pytestmark = pytest.mark.django_db

migration = importlib.import_module("conversations.migrations.0004_message_outcome")


@pytest.fixture
def conversation():
    owner = get_user_model().objects.create_user("ada")
    return Conversation.objects.create(owner=owner, title="t")


def test_the_store_keeps_a_tool_messages_outcome(conversation):
    store = DjangoConversationStore(owner=conversation.owner_id)
    outcome = {"kind": "denied", "reason": "no", "rule": 2}
    store.set_sync(
        {
            "id": str(conversation.pk),
            "sections": [],
            "messages": [
                {
                    "id": "a",
                    "role": "assistant",
                    "content": "",
                    "calls": [{"id": "c1", "name": "t", "arguments": {}}],
                },
                {
                    "id": "b",
                    "role": "tool",
                    "content": '"denied: no"',
                    "tool_call_id": "c1",
                    "outcome": outcome,
                },
            ],
        }
    )
    assert Message.objects.get(message_id="b").outcome == outcome
    assert store.get_sync(str(conversation.pk))["messages"][1]["outcome"] == outcome


def test_old_tool_rows_get_the_outcome_their_cards_showed(conversation):
    def tool(message_id, call_id, content):
        return Message.objects.create(
            conversation=conversation,
            position=Message.objects.filter(conversation=conversation).count(),
            message_id=message_id,
            role="tool",
            content=content,
            tool_call_id=call_id,
        )

    tool("m1", "ok", '["a.txt"]')
    tool("m2", "bad", '"tool not found: x"')
    tool("m3", "no", '"denied: private"')
    tool("m4", "gone", '"cancelled: the run was aborted before this tool finished"')
    ToolFailure.objects.create(
        conversation=conversation, tool_call_id="bad", tool_name="x", error="tool not found: x"
    )
    AuthorityDecision.objects.create(
        conversation=conversation,
        tool_call_id="no",
        tool_name="y",
        allowed=False,
        reason="private",
        zone="default",
    )
    migration.outcomes_from_old_records(apps, None)
    outcomes = dict(Message.objects.values_list("message_id", "outcome"))
    assert outcomes == {
        "m1": {"kind": "value"},
        "m2": {"kind": "error"},
        "m3": {"kind": "denied", "reason": "private"},
        "m4": {"kind": "cancelled"},
    }
