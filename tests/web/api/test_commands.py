"""Slash commands through ``POST /api/conversations/{id}/messages/``."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.runs import run_service
from conversations.models import Conversation, Message, Section

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fast(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    ensure_demo_profile()


@pytest.fixture
def conversation(alice):
    return Conversation.objects.create(owner=alice, title="commands")


def roles(conversation) -> list[str]:
    return list(
        Message.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("role", flat=True)
    )


async def post(key: str, conversation, content: str) -> tuple[int, dict]:
    """Send ``content`` and wait until its run settled: the status and the body."""
    client = AsyncClient(authorization=f"Bearer {key}")
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": content},
        content_type="application/json",
    )
    if response.streaming:
        raw = b"".join([chunk async for chunk in response.streaming_content])
    else:
        raw = response.content
    return response.status_code, json.loads(raw)


async def test_continue_on_an_empty_conversation_is_refused_and_stores_nothing(
    alice_key, conversation, fast
):
    for content in ("/continue", "   "):
        status, body = await post(alice_key, conversation, content)
        assert status == 400
        assert "nothing to continue" in body["errors"]["content"][0]
    assert await sync_to_async(roles)(conversation) == []


async def test_continue_answers_the_history_without_a_new_user_message(
    alice_key, conversation, fast
):
    status, _ = await post(alice_key, conversation, "  hello there  ")
    assert status == 200
    assert await sync_to_async(roles)(conversation) == ["user", "assistant"]
    stored = await sync_to_async(
        lambda: Message.objects.get(conversation=conversation, role="user").content
    )()
    assert stored == "hello there"  # trimmed
    status, again = await post(alice_key, conversation, "/continue")
    assert status == 200 and again["status"] == "done"
    assert await sync_to_async(roles)(conversation) == ["user", "assistant", "assistant"]


async def test_compact_folds_now_and_a_double_slash_is_sent_as_text(alice_key, conversation, fast):
    status, _ = await post(alice_key, conversation, "/compact")
    assert status == 400
    for text in ("one", "two", "three"):
        assert (await post(alice_key, conversation, text))[0] == 200
    status, folded = await post(alice_key, conversation, "/compact the numbers")
    assert status == 200 and folded["compacted"]["count"] >= 2
    assert await sync_to_async(Section.objects.filter(conversation=conversation).count)() == 1
    assert (await post(alice_key, conversation, "//compact is a command"))[0] == 200
    last = await sync_to_async(
        lambda: Message.objects.filter(conversation=conversation, role="user")
        .order_by("-position")
        .first()
        .content
    )()
    assert last == "/compact is a command"
    await run_service.manager.drain()


@pytest.mark.parametrize("blank", ["", "   ", " \n\t "])
async def test_a_blank_message_continues_like_the_websocket_and_stores_no_message(
    alice_key, conversation, fast, blank
):
    assert (await post(alice_key, conversation, "hello there"))[0] == 200
    status, run = await post(alice_key, conversation, blank)
    assert status == 200 and run["status"] == "done"
    assert await sync_to_async(roles)(conversation) == ["user", "assistant", "assistant"]
