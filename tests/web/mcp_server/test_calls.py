"""A call of an agent at ``/mcp``: an ordinary run of a conversation whose origin is ``mcp``,
answered with the agent's reply, the conversation to go on with and the run's usage."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile
from conversations.models import Conversation, Message, Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

MODES = ["auto", "legacy"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_answers_with_the_reply_the_conversation_and_the_usage(
    mcp, alice, alice_key, demo, mode
):
    async with mcp(mode=mode) as client:
        result = await client.call_tool("demo", {"message": "hello there"})
    assert not result.is_error
    text = result.content[0].text
    assert text.startswith("You said: hello there")
    structured = result.structured_content
    assert structured["status"] == "done" and structured["usage"]["total"] > 0

    conversation = await Conversation.objects.aget(pk=structured["conversation"])
    assert (conversation.owner_id, conversation.origin) == (alice.pk, "mcp")
    assert conversation.title == "hello there"
    run = await Run.objects.aget(pk=structured["run"])
    assert (run.conversation_id, run.status) == (conversation.pk, "done")
    # An ordinary conversation: the API shows it, its run and its messages.
    api = AsyncClient(authorization=f"Bearer {alice_key}")
    shown = (await api.get(f"/api/conversations/{conversation.pk}/")).json()
    assert (shown["origin"], shown["profile"]) == ("mcp", "demo")
    ran = (await api.get(f"/api/runs/{run.pk}/")).json()
    assert ran["content"].strip() == text and ran["usage"]["total"] == structured["usage"]["total"]


@pytest.mark.parametrize("mode", MODES)
async def test_passing_the_conversation_back_goes_on_with_it(mcp, editor, stub, mode):
    await sync_to_async(editor)()
    stub.enqueue(reply("openai", ["First answer."]), reply("openai", ["Second answer."]))
    async with mcp(mode=mode) as client:
        first = await client.call_tool("editor", {"message": "one"})
        conversation = first.structured_content["conversation"]
        second = await client.call_tool(
            "editor", {"message": "two", "conversation": conversation.upper()}
        )
    assert (first.content[0].text, second.content[0].text) == ("First answer.", "Second answer.")
    assert second.structured_content["conversation"] == conversation
    assert second.structured_content["run"] != first.structured_content["run"]
    # The model saw the whole conversation the second time.
    sent = [(m["role"], m["content"]) for m in stub.requests[1].json()["messages"]]
    assert sent[-3:] == [("user", "one"), ("assistant", "First answer."), ("user", "two")]
    stored = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation_id=conversation)
            .order_by("position")
            .values_list("role", "content")
        )
    )()
    assert [content for _, content in stored] == ["one", "First answer.", "two", "Second answer."]


@pytest.fixture
def bobs(bob, demo) -> Conversation:
    return Conversation.objects.create(owner=bob, title="Bob's", profile=demo)


@pytest.mark.parametrize("mode", MODES)
async def test_another_users_conversation_is_refused_and_nothing_runs(mcp, bobs, mode):
    async with mcp(mode=mode) as client:
        result = await client.call_tool("demo", {"message": "hi", "conversation": str(bobs.pk)})
        garbled = await client.call_tool("demo", {"message": "hi", "conversation": "not-an-id"})
    assert result.is_error and result.content[0].text == f"No conversation '{bobs.pk}' of yours."
    assert result.structured_content["error"]["code"] == "unknown_conversation"
    assert garbled.is_error
    assert garbled.structured_content["error"]["code"] == "unknown_conversation"
    assert await Run.objects.acount() == 0 and await Message.objects.acount() == 0
    assert await Conversation.objects.acount() == 1


async def test_a_conversation_with_another_agent_names_the_tool_to_call(mcp, alice, demo):
    other = await AgentProfile.objects.acreate(slug="other", name="Other", model="demo/echo")
    mine = await Conversation.objects.acreate(owner=alice, profile=other)
    async with mcp() as client:
        result = await client.call_tool("demo", {"message": "hi", "conversation": str(mine.pk)})
    assert result.is_error and result.structured_content["error"]["code"] == "other_agent"
    assert "call the tool 'other'" in result.content[0].text
    assert await Run.objects.acount() == 0


async def test_a_failed_run_is_an_error_with_the_reason(mcp, editor, stub):
    await sync_to_async(editor)()
    stub.enqueue(reply("openai", ["no"], status=500))
    async with mcp() as client:
        result = await client.call_tool("editor", {"message": "hi"})
    assert result.is_error and result.structured_content["error"]["code"] == "run_failed"
    assert result.content[0].text.startswith("The agent's run failed:")
    run = await Run.objects.aget(pk=result.structured_content["run"])
    assert run.status == "error"
