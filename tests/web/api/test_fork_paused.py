"""A conversation paused for approval is not forked (``409``, as while a run is going): a copy
would hold the held call's placeholder result with no approval to decide it. Once decided and
gone on, it forks."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AuthorityPolicy, AuthorityRule
from conversations.models import Conversation, ToolApproval
from tests.providers.turns import reply

from .test_approvals import WRITE, decide, nth_settled, send

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def careful(alice, editor) -> Conversation:
    """A conversation whose workspace writes ask its owner first."""
    policy = AuthorityPolicy.objects.create(name="careful")
    AuthorityRule.objects.create(
        policy=policy, position=1, tool_glob="workspace", zone="files", verdict="ask"
    )
    profile = editor(authority_policy=policy)
    return Conversation.objects.create(owner=alice, title="Notes", profile=profile)


async def test_a_paused_conversation_is_not_forked_until_its_calls_are_decided(
    alice_key, careful, stub
):
    chat = careful
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Done."]))
    run = await send(client, chat, "write my notes")
    assert run["status"] == "awaiting_approval"
    base = f"/api/conversations/{chat.pk}"
    messages = (await client.get(f"{base}/messages/")).json()["messages"]
    held = messages[-1]
    assert held["role"] == "tool"

    for message in (held, messages[0]):
        response = await client.post(
            f"{base}/fork/", {"message": message["id"]}, content_type="application/json"
        )
        assert response.status_code == 409
        assert response.json()["code"] == "busy" and "approval" in response.json()["detail"]
    assert await sync_to_async(Conversation.objects.count)() == 1
    assert await sync_to_async(ToolApproval.objects.count)() == 1

    approval = await sync_to_async(lambda: ToolApproval.objects.get().pk)()
    status, _ = await decide(client, approval, decision="approve")
    assert status == 200
    assert (await nth_settled(chat, 2)).status == "done"
    response = await client.post(
        f"{base}/fork/", {"message": held["id"]}, content_type="application/json"
    )
    assert response.status_code == 201
    fork = response.json()["id"]
    copied = (await client.get(f"/api/conversations/{fork}/messages/")).json()["messages"]
    source = (await client.get(f"{base}/messages/")).json()["messages"]
    assert [m["id"] for m in copied] == [m["id"] for m in source][: len(copied)]
    assert copied[-1]["id"] == held["id"]
    # The fork holds no approval to decide: its own history only.
    assert await sync_to_async(ToolApproval.objects.filter(conversation_id=fork).count)() == 0
