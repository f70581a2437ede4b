"""Human approval in the chat: held calls reach every tab, are decided over the socket (or by
any process, after a restart), together per turn, and expire by the profile's policy."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.authority import NO_APPROVER, PolicyAuthority
from agents.models import AgentProfile, AuthorityPolicy, AuthorityRule
from agents.runs import RunManager, RunService
from conversations.approvals import Decision
from conversations.models import Conversation, Run, ToolApproval
from orkestrel.core import ToolCall
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"operation": "write", "path": "a.md", "content": "A"}
REMOVE = {"operation": "remove", "path": "b.md"}


@pytest.fixture
def policy() -> AuthorityPolicy:
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
def chat(user, editor, policy) -> Conversation:
    profile = editor(authority_policy=policy)
    return Conversation.objects.create(owner=user, title="Notes", profile=profile)


def tool_results(request) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] for m in request.json()["messages"] if m["role"] == "tool"
    }


async def test_two_held_calls_wait_for_both_decisions_and_every_tab_sees_them(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", WRITE), ("c2", "workspace", REMOVE)]),
        reply("openai", ["Done."]),
    )
    first, _ = await connect(user, chat)
    second, _ = await connect(user, chat)
    await first.send_json_to({"type": "send", "content": "tidy up"})
    frames = await until(first, "finish")
    held = next(f for f in frames if f["type"] == "approval")["approvals"]
    assert [(a["call_id"], a["status"]) for a in held] == [("c1", "pending"), ("c2", "pending")]
    assert frames[-1]["result"]["stop"] == "awaiting_approval"
    # A reload shows them too.
    reloaded, state = await connect(user, chat)
    assert [a["call_id"] for a in state["approvals"]] == ["c1", "c2"]
    await reloaded.disconnect()

    await second.send_json_to({"type": "approve", "id": held[0]["id"], "decision": "approve"})
    seen = await until(first, "approval")
    assert seen[-1]["decided"]["call_id"] == "c1"
    assert [a["call_id"] for a in seen[-1]["approvals"]] == ["c2"]
    assert len(stub.requests) == 1  # one call still waits: the run does not go on yet
    await first.send_json_to(
        {"type": "approve", "id": held[1]["id"], "decision": "deny", "reason": "keep b"}
    )
    await until(second, "finish")  # the paused run's, still in this tab's queue
    frames = await until(second, "finish")
    assert [f["call"]["id"] for f in frames if f["type"] == "tool"] == ["c1", "c2"]
    results = tool_results(stub.requests[1])
    assert "a.md" in results["c1"] and results["c2"] == json.dumps("denied by ada: keep b")
    await first.disconnect()
    await second.disconnect()


async def test_a_bad_approve_frame_is_refused_and_changes_nothing(user, chat, stub, manager):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "write"})
    frames = await until(socket, "finish")
    approval = next(f for f in frames if f["type"] == "approval")["approvals"][0]["id"]
    for bad in (
        {"type": "approve", "id": "x", "decision": "approve"},
        {"type": "approve", "id": approval, "decision": "maybe"},
        {"type": "approve", "id": approval, "decision": "deny", "arguments": {}},
        {"type": "approve", "id": approval + 99, "decision": "approve"},
    ):
        await socket.send_json_to(bad)
        error = await socket.receive_json_from(timeout=5)
        assert error["type"] == "error" and error["code"] in ("invalid", "not_found")
    assert await sync_to_async(ToolApproval.objects.get)(pk=approval) is not None
    assert (await sync_to_async(ToolApproval.objects.get)(pk=approval)).status == "pending"
    await socket.disconnect()


async def test_a_paused_run_goes_on_in_another_process_after_a_restart(user, chat, stub, manager):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Done."]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "write"})
    await until(socket, "finish")
    await socket.disconnect()
    approval = await sync_to_async(lambda: ToolApproval.objects.get().pk)()
    # Nothing of the paused run lives in memory: a new process decides, and goes on.
    restarted = RunService(RunManager())
    await restarted.decide(
        user_id=user.pk, username="ada", approval_id=approval, decision=Decision(True)
    )
    await restarted.manager.wait(str(chat.pk))
    runs = await sync_to_async(lambda: list(Run.objects.order_by("id").values_list("status")))()
    assert runs == [("done",), ("done",)]
    assert "a.md" in tool_results(stub.requests[1])["c1"]


async def test_an_approval_nobody_decides_in_time_is_denied_by_the_sweep(user, chat, stub, manager):
    await sync_to_async(AgentProfile.objects.filter(slug="editor").update)(approval_timeout=60)
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["OK."]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "write"})
    await until(socket, "finish")
    row = await sync_to_async(ToolApproval.objects.get)()
    assert row.expires is not None and row.expires > timezone.now() + timedelta(seconds=50)
    await manager.sweeper.approvals()
    assert len(stub.requests) == 1  # not due yet
    await sync_to_async(ToolApproval.objects.update)(expires=timezone.now() - timedelta(seconds=1))
    await manager.sweeper.approvals()
    await until(socket, "finish")
    assert tool_results(stub.requests[1])["c1"] == json.dumps(
        "denied: nobody approved this call in time"
    )
    assert (await sync_to_async(ToolApproval.objects.get)()).status == "expired"
    await socket.disconnect()


async def test_keep_waiting_never_expires(user, chat, stub, manager):
    await sync_to_async(AgentProfile.objects.filter(slug="editor").update)(
        approval_timeout=1, approval_timeout_action="wait"
    )
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "write"})
    await until(socket, "finish")
    assert (await sync_to_async(ToolApproval.objects.get)()).expires is None
    await socket.disconnect()


def test_an_ask_with_nobody_to_answer_it_denies(policy):
    """A run with no gate (an agent job) cannot wait for a person: the call is denied."""
    authority = PolicyAuthority(policy, list(policy.rules.all()))
    decision = authority.evaluate(ToolCall("c1", "workspace", WRITE))
    assert (decision.allowed, decision.reason, decision.zone) == (False, NO_APPROVER, "files")
    assert authority.evaluate(ToolCall("c2", "workspace", {"operation": "list"})).allowed


async def test_a_decided_calls_result_is_stored_in_place_of_its_placeholder(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", WRITE), ("c2", "workspace", REMOVE)]),
        reply("openai", ["Done."]),
        reply("openai", ["Still here."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "tidy up"})
    frames = await until(socket, "finish")
    held = next(f for f in frames if f["type"] == "approval")["approvals"]
    await socket.send_json_to({"type": "approve", "id": held[0]["id"], "decision": "approve"})
    await socket.send_json_to(
        {"type": "approve", "id": held[1]["id"], "decision": "deny", "reason": "keep b"}
    )
    await until(socket, "finish")  # the run that went on
    # The next run reads the history from the database: the decided results, not placeholders.
    await socket.send_json_to({"type": "send", "content": "and now?"})
    await until(socket, "finish")
    later = tool_results(stub.requests[2])
    assert "a.md" in later["c1"] and later["c2"] == json.dumps("denied by ada: keep b")
    stored = await sync_to_async(
        lambda: dict(chat.messages.filter(role="tool").values_list("tool_call_id", "content"))
    )()
    assert stored == later
    await socket.disconnect()
