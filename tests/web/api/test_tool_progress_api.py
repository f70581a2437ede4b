"""Over the REST API: a command tool's output streams as ``tool_progress`` events of its run
while it runs; a call's asked ``timeout`` bounds it and the model reads that it timed out; the
workspace tool lists the workspaces the model may switch to."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import Tool
from conversations.models import Conversation
from tests.providers.turns import reply
from workspaces.models import Workspace

from .test_runs import client_for, parse_events, read_stream

pytestmark = pytest.mark.django_db(transaction=True)

TICKER = {
    "type": "object",
    "properties": {"seconds": {"type": "integer"}, "timeout": {"type": "number"}},
}


@pytest.fixture
def chat(alice, editor, settings) -> Conversation:
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
    return Conversation.objects.create(owner=alice, title="Ticker", profile=profile)


async def send_and_wait(key: str, chat: Conversation, content: str) -> dict:
    response = await client_for(key).post(
        f"/api/conversations/{chat.pk}/messages/?wait=true",
        {"content": content},
        content_type="application/json",
    )
    return json.loads(await read_stream(response))


async def test_a_commands_output_streams_as_progress_events_while_it_runs(alice_key, chat, stub):
    stub.enqueue(
        reply("openai", calls=[("c1", "ticker", {"seconds": 30})]), reply("openai", ["Stopped."])
    )
    client = client_for(alice_key)
    started = await client.post(
        f"/api/conversations/{chat.pk}/messages/",
        {"content": "tick"},
        content_type="application/json",
    )
    run_id = started.json()["id"]
    followed = await client.get(f"/api/runs/{run_id}/events/")
    text = ""
    cancelled = False
    async with asyncio.timeout(30):
        async for chunk in followed.streaming_content:
            text += chunk.decode()
            shown = [
                e["data"]["display"]["lines"]
                for e in parse_events(text)
                if e["event"] == "tool_progress"
            ]
            if not cancelled and ["one", "two"] in shown:
                # Live: the command still runs (its sleep) when its output arrives.
                assert "event: tool\n" not in text
                cancelled = True
                await client.post(f"/api/runs/{run_id}/cancel/")
    events = parse_events(text)
    assert cancelled and events[-1]["event"] == "finish"
    kinds = [e["event"] for e in events]
    assert kinds.index("tool_execute") < kinds.index("tool_progress")
    progress = next(e["data"] for e in events if e["event"] == "tool_progress")
    assert progress["call"] == "c1" and progress["display"]["kind"] == "command"


async def test_the_asked_timeout_bounds_the_call_and_the_model_reads_it_timed_out(
    alice_key, chat, stub
):
    stub.enqueue(
        reply("openai", calls=[("c1", "ticker", {"seconds": 30, "timeout": 0.3})]),
        reply("openai", ["It took too long."]),
    )
    body = await send_and_wait(alice_key, chat, "tick briefly")
    assert body["status"] == "done"
    read = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    value = json.loads(read["content"])
    assert value["timed_out"] is True
    assert value["status"] == "timed out after 0.3s: stopped with SIGTERM"


async def test_the_workspace_tool_lists_the_users_workspaces_only(alice_key, bob, chat, stub):
    side = await sync_to_async(Workspace.objects.create)(owner=chat.owner, name="Side")
    await sync_to_async(Workspace.objects.create)(owner=bob, name="Bob's")
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", {"operation": "list_workspaces"})]),
        reply("openai", ["Two."]),
    )
    body = await send_and_wait(alice_key, chat, "which workspaces?")
    assert body["status"] == "done"
    read = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    value = json.loads(read["content"])
    names = {entry["name"] for entry in value["workspaces"]}
    assert "Side" in names and "Bob's" not in names
    assert str(side.pk) in {entry["id"] for entry in value["workspaces"]}
    assert sum(entry["active"] for entry in value["workspaces"]) == 1


async def test_the_transcript_names_the_model_that_wrote_each_answer(alice_key, chat, stub):
    stub.enqueue(reply("openai", ["Hello."]))
    body = await send_and_wait(alice_key, chat, "hi")
    assert body["status"] == "done" and body["model"] == "stub/m"
    transcript = (await client_for(alice_key).get(f"/api/conversations/{chat.pk}/messages/")).json()
    answer = next(m for m in transcript["messages"] if m["role"] == "assistant")
    assert transcript["models"] == {
        answer["id"]: {"model": "stub/m", "response_model": body["response_model"]}
    }
    user = next(m for m in transcript["messages"] if m["role"] == "user")
    assert user["id"] not in transcript["models"]
