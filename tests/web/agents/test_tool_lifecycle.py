"""A tool call's lifecycle reaches the chat as frames: ``tool_call`` while the model writes it
(its pieces join to the arguments), ``tool_execute`` when it starts, ``tool`` with its result."""

from __future__ import annotations

import json

import pytest

from conversations.models import Conversation
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"operation": "write", "path": "a.md", "content": "A"}
LIST = {"operation": "list"}


@pytest.fixture
def chat(user, editor) -> Conversation:
    return Conversation.objects.create(owner=user, title="Notes", profile=editor())


async def test_a_call_is_seen_written_then_running_then_with_its_result(user, chat, stub, manager):
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", LIST), ("c2", "workspace", WRITE)]),
        reply("openai", ["Done."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "write"})
    frames = await until(socket, "finish")
    await socket.disconnect()

    written: dict[int, str] = {}
    for frame in (f for f in frames if f["type"] == "tool_call"):
        written[frame["index"]] = written.get(frame["index"], "") + frame["arguments"]
    assert {index: json.loads(text) for index, text in written.items()} == {0: LIST, 1: WRITE}
    lifecycle = [
        (frame["type"], frame["call"]["id"])
        for frame in frames
        if frame["type"] in ("tool_execute", "tool")
    ]
    # The safe list starts, then the write alone (in its own batch); the results follow in
    # the model's order once the turn's calls ended.
    assert lifecycle == [
        ("tool_execute", "c1"),
        ("tool_execute", "c2"),
        ("tool", "c1"),
        ("tool", "c2"),
    ]
    kinds = [frame["type"] for frame in frames]
    assert kinds.index("tool_call") < kinds.index("tool_execute")
    assert [frame["seq"] for frame in frames] == list(range(1, len(frames) + 1))


async def test_blocks_and_requests_frame_the_deltas_of_every_model_request(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", ["Let me ", "look."], calls=[("c1", "workspace", LIST)]),
        reply("openai", ["Done."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "look"})
    frames = await until(socket, "finish")
    await socket.disconnect()

    framing = {"request_start", "request_done", "block_start", "block_end", "tool_execute"}
    events = [
        (f["type"], f.get("turn", f.get("index")), f.get("content"))
        for f in frames
        if f["type"] in framing
    ]
    assert events == [
        ("request_start", 0, None),
        ("block_start", 0, None),
        ("block_end", 0, "Let me look."),
        ("request_done", 0, None),
        ("tool_execute", None, None),
        ("request_start", 1, None),
        ("block_start", 1, None),
        ("block_end", 1, "Done."),
        ("request_done", 1, None),
    ]
    done = [f for f in frames if f["type"] == "request_done"]
    assert [f["usage"]["total"] for f in done] == [15, 15]
    # Each block's deltas sit between its start and its end.
    kinds = [f["type"] for f in frames]
    first_end = kinds.index("block_end")
    assert "token" in kinds[kinds.index("block_start") : first_end]
    assert "token" not in kinds[first_end : kinds.index("request_start", first_end)]
