"""Edits the model makes after switching to another of the user's workspaces are saved there,
and the conversation's own workspace keeps only its own edits."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.models import Conversation
from tests.providers.turns import reply
from workspaces.models import Workspace
from workspaces.stores import DjangoWorkspaceStore

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(alice, editor) -> Conversation:
    return Conversation.objects.create(owner=alice, title="Notes", profile=editor())


@sync_to_async
def paths(owner, workspace_id) -> list[str]:
    stored = DjangoWorkspaceStore(owner=owner).get_sync(str(workspace_id))
    return sorted(file["path"] for file in stored["files"])


async def test_writes_after_a_switch_land_in_the_workspace_switched_to(alice_key, chat, stub):
    other = await sync_to_async(Workspace.objects.create)(owner=chat.owner, name="Side")
    write = {"operation": "write", "path": "side.md", "content": "kept"}
    stub.enqueue(
        reply(
            "openai",
            calls=[
                ("c1", "workspace", {"operation": "write", "path": "home.md", "content": "h"}),
                ("c2", "workspace", {"operation": "switch", "workspace": str(other.pk)}),
                ("c3", "workspace", write),
            ],
        ),
        reply("openai", ["Saved in both."]),
    )
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.post(
        f"/api/conversations/{chat.pk}/messages/?wait=true",
        {"content": "write in both"},
        content_type="application/json",
    )
    body = json.loads(b"".join([chunk async for chunk in response.streaming_content]))
    assert body["status"] == "done"
    home = await sync_to_async(lambda: Conversation.objects.get(pk=chat.pk).workspace_id)()
    assert await paths(chat.owner, home) == ["home.md"]
    assert await paths(chat.owner, other.pk) == ["side.md"]


async def test_another_users_workspace_cannot_be_switched_to(alice_key, bob, chat, stub):
    theirs = await sync_to_async(Workspace.objects.create)(owner=bob, name="Bob's")
    stub.enqueue(
        reply(
            "openai",
            calls=[("c1", "workspace", {"operation": "switch", "workspace": str(theirs.pk)})],
        ),
        reply("openai", ["No."]),
    )
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.post(
        f"/api/conversations/{chat.pk}/messages/?wait=true",
        {"content": "look at bob's"},
        content_type="application/json",
    )
    b"".join([chunk async for chunk in response.streaming_content])
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert "no workspace" in tool["content"]
