"""A chat run's delegate call shows its child while it runs: ``tool_progress`` frames on the
socket carry the child's job, status and progress before the call's ``tool`` frame ends it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentJob
from conversations.models import Conversation
from tests.providers.turns import reply

from .sockets import connect

pytestmark = pytest.mark.django_db(transaction=True)

TASK = {"profile": "helper", "task": "write half an answer"}


@pytest.fixture
def chat(user, delegating) -> Conversation:
    return delegating(user)


def progress_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("delegate-progress:")]


async def test_the_card_follows_the_running_child_until_the_tool_frame_ends_it(
    user, chat, stub, manager, quick_jobs
):
    release = threading.Event()
    stub.enqueue(
        reply("openai", calls=[("c1", "delegate", TASK)]),
        # The child writes, then its model stalls until the test releases it.
        reply("openai", ["Half ", "way"], gate=release),
        reply("openai", ["The helper wrote half."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "delegate it"})
    frames: list[dict[str, Any]] = []
    async with asyncio.timeout(20):
        while True:
            frame = await socket.receive_json_from(timeout=10)
            frames.append(frame)
            assert frame["type"] != "tool", "the call ended before the child was released"
            display = frame.get("display") or {}
            if frame["type"] == "tool_progress" and display["progress"]["text"] == "Half way":
                break
    progress = [f for f in frames if f["type"] == "tool_progress"]
    assert all(f["call"] == "c1" for f in progress)
    first = progress[0]["display"]
    job = await sync_to_async(AgentJob.objects.get)(pk=first["job"])
    assert first["kind"] == "delegate" and first["profile"] == "helper"
    assert job.profile_id is not None and job.depth == 1
    latest = progress[-1]["display"]
    assert latest["status"] == "running" and latest["attempt"] == 1
    assert latest["progress"] == {
        "turns": 1,
        "tools": 0,
        "last_tool": "",
        "tokens": 0,
        "text": "Half way",
    }
    # The card said the call runs before its child's progress came.
    kinds = [f["type"] for f in frames]
    assert kinds.index("tool_execute") < kinds.index("tool_progress")
    assert progress_tasks(), "the card stopped following the child while it runs"

    release.set()
    async with asyncio.timeout(20):
        while frames[-1]["type"] != "finish":
            frames.append(await socket.receive_json_from(timeout=10))
    await socket.disconnect()
    kinds = [f["type"] for f in frames]
    ended = kinds.index("tool")
    assert "tool_progress" not in kinds[ended:]
    final = frames[ended]["display"]
    assert final["job"] == str(job.pk) and final["status"] == "done"
    assert final["progress"]["tokens"] == 15
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    # Nothing looks at the child's row any more.
    assert progress_tasks() == []
