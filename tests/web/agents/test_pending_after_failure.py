"""After a failed run, messages sent meanwhile stay pending (seed 004: "an error leaves them
pending until a later run or pendingPop()"): no new run fails again at once; the person's next
send (or continue) takes them first, or they take them back. Interrupted runs differ: see
``test_interruptions`` (their waiting messages start the next run)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, ApiKey, ProviderEndpoint
from agents.runs import run_manager
from conversations.models import Conversation, Message, PendingMessage, Run
from tests.providers.server import Reply
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(user, stub) -> Conversation:
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="plain", name="Plain", model="stub/m")
    return Conversation.objects.create(owner=user, title="down", profile=profile)


@sync_to_async
def state(chat) -> tuple[list[str], list[str], list[str]]:
    """The stored user messages, the pending texts and the runs' statuses, oldest first."""
    users = list(
        Message.objects.filter(conversation=chat, role="user")
        .order_by("position")
        .values_list("content", flat=True)
    )
    pending = list(
        PendingMessage.objects.filter(conversation=chat).values_list("content", flat=True)
    )
    runs = list(
        Run.objects.filter(conversation=chat).order_by("id").values_list("status", flat=True)
    )
    return users, pending, runs


async def fail_with_one_waiting(user, chat, stub, manager):
    """Send "one" (its model call fails), and "two" while it is on its way; a socket."""
    gate = threading.Event()
    # A stream that breaks once the test lets it (an error status would fail the run at
    # once, before "two" could wait behind it).
    stub.enqueue(Reply([b"data: {not json\n\n"], gate=gate))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "one"})
    await until(socket, "started")
    while not stub.requests:  # "one" is at the model: "two" cannot join that request
        await asyncio.sleep(0.01)
    await socket.send_json_to({"type": "send", "content": "two"})
    await until(socket, "pending")
    gate.set()
    error = (await until(socket, "error"))[-1]
    assert error["code"] == "run_failed"
    # Every run this process holds has ended, a next one included, had one started.
    await manager.quiet()
    assert await state(chat) == (["one"], ["two"], ["error"])
    assert len(stub.requests) == 1
    return socket


async def test_a_failed_run_leaves_them_pending_and_the_next_send_takes_them_first(
    user, chat, stub, manager
):
    socket = await fail_with_one_waiting(user, chat, stub, manager)
    stub.enqueue(reply("openai", ["Back."]))

    await socket.send_json_to({"type": "send", "content": "three", "nonce": "n3"})

    frames = await until(socket, "finish")
    await socket.disconnect()
    await manager.quiet()
    started = next(f for f in frames if f["type"] == "started")
    assert started["message"]["content"] == "two\n\nthree"
    assert await state(chat) == (["one", "two\n\nthree"], [], ["error", "done"])
    assert stub.requests[1].json()["messages"][-1]["content"] == "two\n\nthree"


async def test_a_blank_send_after_a_failed_run_sends_what_waits(user, chat, stub, manager):
    socket = await fail_with_one_waiting(user, chat, stub, manager)
    stub.enqueue(reply("openai", ["Back."]))
    await socket.send_json_to({"type": "send", "content": "  "})
    frames = await until(socket, "finish")
    await socket.disconnect()
    assert next(f for f in frames if f["type"] == "started")["message"]["content"] == "two"
    assert await state(chat) == (["one", "two"], [], ["error", "done"])


async def test_after_a_failed_run_they_can_be_taken_back(user, chat, stub, manager):
    socket = await fail_with_one_waiting(user, chat, stub, manager)
    await socket.send_json_to({"type": "pending_pop"})
    frame = (await until(socket, "pending"))[-1]
    while not frame["taken"]:
        frame = (await until(socket, "pending"))[-1]
    assert frame["taken"] == ["two"]
    await socket.disconnect()
    assert await state(chat) == (["one"], [], ["error"])


async def test_over_rest_the_next_message_takes_them_first_too(user, chat, stub):
    # The process's own manager: the REST door and the socket share it.
    socket = await fail_with_one_waiting(user, chat, stub, run_manager)
    await socket.disconnect()
    stub.enqueue(reply("openai", ["Back."]))
    key = await sync_to_async(lambda: ApiKey.objects.issue(user=user, name="t")[1])()
    client = AsyncClient(authorization=f"Bearer {key}")
    response = await client.post(
        f"/api/conversations/{chat.pk}/messages/?wait=true",
        {"content": "three"},
        content_type="application/json",
    )
    raw = b"".join([c async for c in response.streaming_content])
    assert response.status_code == 200, raw
    await run_manager.quiet()
    assert await state(chat) == (["one", "two\n\nthree"], [], ["error", "done"])
