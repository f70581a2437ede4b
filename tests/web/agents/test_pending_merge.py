"""A message sent while a run works joins it at its next model request: after the turn's
tool results, merged into one user message, in the same run (seed 004's pending)."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import sync_to_async

from conversations.models import Conversation, Message, PendingMessage, Run
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

LIST = {"operation": "list"}


@pytest.fixture
def chat(user, editor) -> Conversation:
    return Conversation.objects.create(owner=user, title="Notes", profile=editor())


async def test_messages_sent_during_a_turn_join_the_next_request_of_the_same_run(
    user, chat, stub, manager
):
    gate = threading.Event()
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", LIST)], gate=gate),
        reply("openai", ["Both answered."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "list my files"})
    await until(socket, "started")
    # The first turn is still streaming: these wait as pending.
    await socket.send_json_to({"type": "send", "content": "and then"})
    await until(socket, "pending")
    await socket.send_json_to({"type": "send", "content": "say hi"})
    await until(socket, "pending")
    gate.set()
    frames = await until(socket, "finish")
    await socket.disconnect()

    sent = stub.requests[1].json()["messages"]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "user"]
    assert sent[-1]["content"] == "and then\n\nsay hi"
    # One run did it all; the queue is empty and every tab was told.
    assert len(stub.requests) == 2
    assert await sync_to_async(Run.objects.count)() == 1
    assert not await sync_to_async(PendingMessage.objects.exists)()
    assert any(f["type"] == "pending" and f["messages"] == [] for f in frames)
    committed = [m for f in frames if f["type"] == "committed" for m in f["messages"]]
    assert [m["content"] for m in committed if m["role"] == "user"] == ["and then\n\nsay hi"]
    stored = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation=chat).order_by("position").values_list("role")
        )
    )()
    assert stored == [("user",), ("assistant",), ("tool",), ("user",), ("assistant",)]
