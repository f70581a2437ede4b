"""A delegating run over the REST API's event stream: its ``tool_progress`` events come live
while the child runs, numbered with the run's other events, and replay from ``Last-Event-ID``
and from the database like any other event."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agents.runs import RunManager, RunService, run_service
from conversations.models import Conversation
from tests.providers.turns import reply

from .test_runs import client_for, parse_events, read_stream

pytestmark = pytest.mark.django_db(transaction=True)

TASK = {"profile": "helper", "task": "write half an answer"}


@pytest.fixture
def conversation(alice, delegating) -> Conversation:
    return delegating(alice)


async def test_progress_events_stream_live_and_replay_like_every_event(
    alice_key, conversation, stub, quick_jobs
):
    release = threading.Event()
    stub.enqueue(
        reply("openai", calls=[("c1", "delegate", TASK)]),
        reply("openai", ["Half ", "way"], gate=release),
        reply("openai", ["The helper wrote half."]),
    )
    client = client_for(alice_key)
    started = await client.post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "delegate it"},
        content_type="application/json",
    )
    run_id = started.json()["id"]
    followed = await client.get(f"/api/runs/{run_id}/events/")
    assert followed["Content-Type"] == "text/event-stream"
    text = ""
    async with asyncio.timeout(20):
        async for chunk in followed.streaming_content:
            text += chunk.decode()
            if not release.is_set() and any(
                e["event"] == "tool_progress"
                and e["data"]["display"]["progress"]["text"] == "Half way"
                for e in parse_events(text)
            ):
                # Live: the child is still held by its model when its progress arrives.
                assert "event: tool\n" not in text
                release.set()
    events = parse_events(text)
    assert events[-1]["event"] == "finish"
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    kinds = [e["event"] for e in events]
    assert kinds.index("tool_execute") < kinds.index("tool_progress") < kinds.index("tool")
    first = kinds.index("tool_progress")
    # A follower that reconnects after the first progress event gets every later one.
    resumed = await client.get(
        f"/api/runs/{run_id}/events/", headers={"Last-Event-ID": events[first]["id"]}
    )
    rest = parse_events(await read_stream(resumed))
    assert [e["data"] for e in rest] == [e["data"] for e in events[first + 1 :]]
    # Stored with the run: a process that never ran it replays them from the database.
    await run_service.wait(run_id)
    stored = [frame async for frame in RunService(RunManager()).follow(run_id)]
    assert stored == [e["data"] for e in events]
