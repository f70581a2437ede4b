"""Over the chat socket: a command tool's output reaches its card as ``tool_progress`` frames
while it runs, and a tab joining mid-call finds the call running with its progress in the
``state`` frame; a call's asked ``timeout`` bounds it and the model reads that it timed out;
the workspace tool lists the workspaces the model may switch to; the answer says which model
wrote it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import Tool
from conversations.models import Conversation
from tests.providers.turns import reply
from workspaces.models import Workspace

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

TICKER = {
    "type": "object",
    "properties": {"seconds": {"type": "integer"}, "timeout": {"type": "number"}},
}


@pytest.fixture
def chat(user, editor, settings) -> Conversation:
    settings.ORKESTREL = {**settings.ORKESTREL, "COMMAND_PROGRESS_SECONDS": 0.05}
    profile = editor()
    ticker = Tool.objects.create(
        name="ticker",
        kind=Tool.Kind.COMMAND,
        program="sh",
        argv=["-c", "echo one; echo two; sleep {seconds}"],
        parameters=TICKER,
        safe=True,
        timeout=60.0,
    )
    profile.tools.add(ticker)
    return Conversation.objects.create(owner=user, title="Ticker", profile=profile)


async def frames_until(socket, done) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    async with asyncio.timeout(30):
        while True:
            frame = await socket.receive_json_from(timeout=15)
            frames.append(frame)
            if done(frame):
                return frames


def two_lines(frame: dict[str, Any]) -> bool:
    return frame["type"] == "tool_progress" and frame["display"]["lines"] == ["one", "two"]


async def test_a_commands_output_reaches_its_card_and_a_joining_tab_sees_the_running_call(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", calls=[("c1", "ticker", {"seconds": 30})]), reply("openai", ["Stopped."])
    )
    first, _ = await connect(user, chat)
    await first.send_json_to({"type": "send", "content": "tick"})
    frames = await frames_until(first, two_lines)
    progress = [f for f in frames if f["type"] == "tool_progress"]
    assert all(f["call"] == "c1" for f in progress)
    assert progress[-1]["display"]["kind"] == "command"
    assert isinstance(progress[-1]["display"]["elapsed"], float)
    kinds = [f["type"] for f in frames]
    assert kinds.index("tool_execute") < kinds.index("tool_progress")
    assert "tool" not in kinds, "the call ended before its output was shown"

    second, state = await connect(user, chat)
    running = state["run"]["running"]
    assert [entry["call"]["id"] for entry in running] == ["c1"]
    assert running[0]["call"]["name"] == "ticker"
    assert running[0]["call"]["arguments"] == {"seconds": 30}
    assert running[0]["display"]["lines"] == ["one", "two"]
    assert running[0]["elapsed"] >= 0

    await first.send_json_to({"type": "abort"})
    await until(first, "finish")
    await first.disconnect()
    await second.disconnect()


async def test_the_model_asks_for_a_time_limit_and_reads_that_the_call_timed_out(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", calls=[("c1", "ticker", {"seconds": 30, "timeout": 0.3})]),
        reply("openai", ["It took too long."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "tick briefly"})
    frames = await frames_until(socket, lambda f: f["type"] == "finish")
    await socket.disconnect()
    tool = next(f for f in frames if f["type"] == "tool")
    value = tool["result"]["value"]
    assert value["timed_out"] is True
    assert value["status"] == "timed out after 0.3s: stopped with SIGTERM"
    assert value["stdout"] == "one\ntwo\n"
    read = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(read["content"])["timed_out"] is True


async def test_the_workspace_tool_lists_the_workspaces_the_model_may_switch_to(
    user, other, chat, stub, manager
):
    side = await sync_to_async(Workspace.objects.create)(owner=user, name="Side notes")
    await sync_to_async(Workspace.objects.create)(owner=other, name="Not yours")
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", {"operation": "list_workspaces"})]),
        reply("openai", ["Two workspaces."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "which workspaces?"})
    frames = await frames_until(socket, lambda f: f["type"] == "finish")
    await socket.disconnect()
    value = next(f for f in frames if f["type"] == "tool")["result"]["value"]
    home = await sync_to_async(lambda: Conversation.objects.get(pk=chat.pk).workspace_id)()
    listed = {entry["id"]: entry for entry in value["workspaces"]}
    assert set(listed) == {str(home), str(side.pk)}
    assert value["active"] == str(home) and listed[str(home)]["active"] is True
    assert listed[str(side.pk)] == {
        "id": str(side.pk),
        "name": "Side notes",
        "files": 0,
        "active": False,
    }


async def test_the_answer_says_which_model_wrote_it_live_and_after_a_reload(
    user, chat, stub, manager
):
    stub.enqueue(reply("openai", ["Hello."]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "hi"})
    frames = await frames_until(socket, lambda f: f["type"] == "finish")
    await socket.disconnect()
    result = frames[-1]["result"]
    assert result["model"] == "stub/m"
    assert isinstance(result["response_model"], str)
    answer = next(
        m
        for f in frames
        if f["type"] == "committed"
        for m in f["messages"]
        if m["role"] == "assistant"
    )
    reload, state = await connect(user, chat)
    await reload.disconnect()
    assert state["models"] == {
        answer["id"]: {"model": "stub/m", "response_model": result["response_model"]}
    }
