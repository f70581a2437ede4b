"""Human approval through the REST API: an ``ask`` rule pauses the run before the call, a
person's decision lets it run (or answers the model with the reason), and the run goes on."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AuthorityPolicy, AuthorityRule
from agents.runs import run_manager
from conversations.models import AuthorityDecision, Conversation, Run, ToolApproval
from tests.providers.turns import reply
from workspaces.stores import DjangoWorkspaceStore

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"operation": "write", "path": "notes.md", "content": "hello"}
LIST = {"operation": "list"}


@pytest.fixture
def policy() -> AuthorityPolicy:
    """Writes to the workspace ask its owner; everything else is allowed."""
    policy = AuthorityPolicy.objects.create(name="careful")
    AuthorityRule.objects.create(
        policy=policy,
        position=1,
        tool_glob="workspace",
        conditions={"operation": {"in": ["write", "remove"]}},
        zone="files",
        verdict="ask",
    )
    return policy


@pytest.fixture
def chat(alice, editor, policy) -> Conversation:
    profile = editor(authority_policy=policy)
    return Conversation.objects.create(owner=alice, title="Notes", profile=profile)


async def send(client: AsyncClient, conversation: Conversation, text: str) -> dict:
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": text},
        content_type="application/json",
    )
    body = b"".join([chunk async for chunk in response.streaming_content])
    assert response.status_code == 200, body
    return json.loads(body)


async def decide(client: AsyncClient, approval: int, **body) -> tuple[int, dict]:
    response = await client.post(
        f"/api/approvals/{approval}/decide/", body, content_type="application/json"
    )
    return response.status_code, response.json()


async def settled(conversation: Conversation) -> Run:
    await run_manager.wait(str(conversation.pk))
    return await sync_to_async(
        lambda: Run.objects.filter(conversation=conversation).order_by("-id").first()
    )()


async def nth_settled(conversation: Conversation, count: int, within: float = 10.0) -> Run:
    """The conversation's ``count``-th run, once it settled (a run that a settle starts comes
    a moment after it: wait for the manager, then look, until it is there)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        await run_manager.wait(str(conversation.pk))
        runs = await sync_to_async(
            lambda: list(Run.objects.filter(conversation=conversation).order_by("id"))
        )()
        if len(runs) >= count and runs[count - 1].status not in ("running", "queued"):
            return runs[count - 1]
        assert asyncio.get_running_loop().time() < deadline, [r.status for r in runs]
        await asyncio.sleep(0.02)


@sync_to_async
def files(conversation: Conversation) -> list[str]:
    workspace = str(Conversation.objects.get(pk=conversation.pk).workspace_id)
    stored = DjangoWorkspaceStore(owner=conversation.owner).get_sync(workspace)
    return [file["path"] for file in stored["files"]]


async def test_an_ask_pauses_the_run_and_an_approval_runs_the_call_and_goes_on(
    alice_key, chat, stub
):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", LIST), ("c2", "workspace", WRITE)]),
        reply("openai", ["Written."]),
    )
    run = await send(client, chat, "write my notes")
    assert (run["status"], run["stop_reason"]) == ("awaiting_approval", "awaiting_approval")
    # The safe call ran; the write waits, unrun, and the model was not asked again.
    assert await files(chat) == [] and len(stub.requests) == 1
    listed = (await client.get("/api/approvals/")).json()["results"]
    assert [(a["call_id"], a["tool"], a["arguments"], a["status"]) for a in listed] == [
        ("c2", "workspace", WRITE, "pending")
    ]
    assert (await client.get(f"/api/runs/{run['id']}/")).json()["status"] == "awaiting_approval"

    code, decided = await decide(client, listed[0]["id"], decision="approve")
    assert (code, decided["status"], decided["decided_by"]) == (200, "approved", "alice")
    after = await settled(chat)
    assert (after.id != run["id"], after.status, after.content) == (True, "done", "Written.")
    assert await files(chat) == ["notes.md"]
    sent = {m.get("tool_call_id"): m["content"] for m in stub.requests[1].json()["messages"]}
    assert "notes.md" in sent["c2"] and "pending" not in sent["c2"]
    assert (await client.get("/api/approvals/")).json()["results"] == []
    decision = await sync_to_async(AuthorityDecision.objects.get)(tool_call_id="c2")
    assert (decision.allowed, decision.rule_label) == (
        True,
        "#1 workspace → ask (approved by alice)",
    )


async def test_a_denial_with_a_reason_reaches_the_model_and_nothing_runs(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["OK."]))
    await send(client, chat, "write my notes")
    approval = (await client.get("/api/approvals/")).json()["results"][0]["id"]
    code, _ = await decide(client, approval, decision="deny", reason="not today")
    assert code == 200
    assert (await settled(chat)).status == "done"
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert tool["content"] == json.dumps("denied by alice: not today")
    assert await files(chat) == []
    # Decided once: a second decision is refused and changes nothing.
    assert (await decide(client, approval, decision="approve"))[0] == 409


async def test_approved_with_edited_arguments_runs_them_and_bad_ones_are_refused(
    alice_key, chat, stub
):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["OK."]))
    await send(client, chat, "write my notes")
    approval = (await client.get("/api/approvals/")).json()["results"][0]["id"]
    code, body = await decide(client, approval, decision="approve", arguments={"operation": 42})
    assert code == 400 and "arguments" in body["errors"]
    still = await sync_to_async(ToolApproval.objects.get)(pk=approval)
    assert still.status == "pending"
    edited = {**WRITE, "path": "draft.md"}
    assert (await decide(client, approval, decision="approve", arguments=edited))[0] == 200
    await settled(chat)
    assert await files(chat) == ["draft.md"]


async def test_another_users_approval_is_a_404_and_a_staff_rule_is_the_operators(
    alice_key, bob, issue_key, chat, stub, policy
):
    await sync_to_async(AuthorityRule.objects.filter(policy=policy).update)(approver="staff")
    alice = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]))
    await send(alice, chat, "write my notes")
    approval = (await alice.get("/api/approvals/")).json()["results"][0]
    assert approval["approver"] == "staff"
    bobs = AsyncClient(authorization=f"Bearer {await sync_to_async(issue_key)(bob)}")
    assert (await bobs.get(f"/api/approvals/{approval['id']}/")).status_code == 404
    assert (await decide(bobs, approval["id"], decision="approve"))[0] == 404
    assert (await decide(alice, approval["id"], decision="approve"))[0] == 403
    assert (await bobs.get("/api/approvals/")).json()["results"] == []


async def test_a_message_sent_while_a_call_waits_is_queued_for_after_it(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", WRITE)]),
        reply("openai", ["Written."]),
        reply("openai", ["And hello."]),
    )
    await send(client, chat, "write my notes")
    queued = await client.post(
        f"/api/conversations/{chat.pk}/messages/",
        {"content": "hi"},
        content_type="application/json",
    )
    assert queued.status_code == 202 and queued.json()["pending"]
    approval = (await client.get("/api/approvals/")).json()["results"][0]["id"]
    await decide(client, approval, decision="approve")
    # The pending message starts the third run once the resumed one ended.
    last = await nth_settled(chat, 3)
    assert last.content == "And hello."
    assert stub.requests[2].json()["messages"][-1] == {"role": "user", "content": "hi"}
