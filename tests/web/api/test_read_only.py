"""Read-only mode of a conversation: set through the API, binding on its runs' tool calls."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile
from conversations.models import AuthorityDecision, Conversation, Message
from orkestrel.core.dispatch import READ_ONLY_REFUSAL
from tests.providers.turns import reply
from workspaces.stores import DjangoWorkspaceStore

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"operation": "write", "path": "notes.md", "content": "overwritten"}
LIST = {"operation": "list"}


@pytest.fixture
def chat(alice, editor) -> Conversation:
    """Alice's conversation on a profile with the workspace tool, its model the stub."""
    return Conversation.objects.create(owner=alice, title="Notes", profile=editor())


async def turn(key: str, conversation: Conversation, text: str) -> int:
    client = AsyncClient(authorization=f"Bearer {key}")
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": text},
        content_type="application/json",
    )
    if response.streaming:
        b"".join([chunk async for chunk in response.streaming_content])
    return response.status_code


async def test_a_read_only_conversation_reads_its_workspace_and_refuses_writes(
    alice_key, chat, stub
):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    toggled = await client.patch(
        f"/api/conversations/{chat.pk}/", {"read_only": True}, content_type="application/json"
    )
    assert toggled.status_code == 200 and toggled.json()["read_only"] is True
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", LIST), ("c2", "workspace", WRITE)]),
        reply("openai", ["I could only look."]),
    )
    assert await turn(alice_key, chat, "rewrite my notes") == 200
    # The whole catalogue was offered; the model read what the refusal says.
    sent = stub.requests[1].json()["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert "[]" in results["c1"] and READ_ONLY_REFUSAL in results["c2"]
    assert [t["function"]["name"] for t in stub.requests[0].json()["tools"]] == ["workspace"]

    @sync_to_async
    def recorded():
        workspace = Conversation.objects.get(pk=chat.pk).workspace_id
        files = DjangoWorkspaceStore(owner=chat.owner).get_sync(str(workspace))["files"]
        decision = AuthorityDecision.objects.get(conversation=chat, tool_call_id="c2")
        return files, decision

    files, decision = await recorded()
    assert files == []
    assert (decision.allowed, decision.zone, decision.rule_label) == (
        False,
        "read_only",
        "read-only mode",
    )
    state = await client.get(f"/api/conversations/{chat.pk}/messages/")
    assert state.status_code == 200


async def test_turning_read_only_off_lets_the_next_write_run(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    url = f"/api/conversations/{chat.pk}/"
    await client.patch(url, {"read_only": True}, content_type="application/json")
    await client.patch(url, {"read_only": False}, content_type="application/json")
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Done."]))
    assert await turn(alice_key, chat, "write it") == 200

    @sync_to_async
    def files():
        workspace = Conversation.objects.get(pk=chat.pk).workspace_id
        return DjangoWorkspaceStore(owner=chat.owner).get_sync(str(workspace))["files"]

    assert [file["path"] for file in await files()] == ["notes.md"]
    # The edit's diff is kept with its call, for the card after a reload; the model saw none.
    outcome = await sync_to_async(
        lambda: Message.objects.get(conversation=chat, role="tool", tool_call_id="c1").outcome
    )()
    assert "+overwritten" in outcome["display"]
    sent = stub.requests[1].json()["messages"]
    assert all("+overwritten" not in str(m.get("content")) for m in sent)
    state = await client.get(f"/api/conversations/{chat.pk}/messages/")
    assert state.status_code == 200


async def test_a_read_only_profile_binds_every_conversation_on_it(alice_key, chat, stub):
    await sync_to_async(AgentProfile.objects.filter(slug="editor").update)(read_only=True)
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["No."]))
    assert await turn(alice_key, chat, "write it") == 200
    sent = stub.requests[1].json()["messages"]
    assert READ_ONLY_REFUSAL in next(m["content"] for m in sent if m["role"] == "tool")
