"""A message queued behind a run is still accepted when the model becomes unavailable
meanwhile (the going run may finish); when the next run from the waiting messages is refused,
every follower gets an ``error`` frame with the refusal's code, the messages stay pending and
no run is left open. A send to the idle conversation is refused at once, nothing stored."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message, PendingMessage, Run
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(user, stub) -> Conversation:
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="plain", name="Plain", model="stub/m")
    return Conversation.objects.create(owner=user, title="soon off", profile=profile)


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


@sync_to_async
def disable_endpoint() -> None:
    endpoint = ProviderEndpoint.objects.get(name="stub")
    endpoint.enabled = False
    endpoint.save()  # as the admin does: the cached configuration follows


async def test_a_message_queued_behind_a_run_whose_endpoint_is_disabled_meanwhile_is_refused_to_followers(  # noqa: E501
    user, chat, stub, manager
):
    gate = threading.Event()
    stub.enqueue(reply("openai", ["Done."], gate=gate))
    socket, _ = await connect(user, chat)
    watcher, _ = await connect(user, chat)  # another tab: a follower that sent nothing
    await socket.send_json_to({"type": "send", "content": "one"})
    await until(socket, "started")
    while not stub.requests:  # "one" is at the model: "two" cannot join that request
        await asyncio.sleep(0.01)
    await disable_endpoint()
    await socket.send_json_to({"type": "send", "content": "two"})
    queued = (await until(socket, "pending"))[-1]
    assert [item["content"] for item in queued["messages"]] == ["two"]
    gate.set()

    frames = await until(socket, "error")
    assert "finish" in [frame["type"] for frame in frames]
    error = frames[-1]
    assert error["code"] == "model_unavailable" and "stub/m" in error["message"]
    assert "run" not in error
    seen = (await until(watcher, "error"))[-1]
    assert seen == error
    await manager.quiet()
    assert await state(chat) == (["one"], ["two"], ["done"])
    assert len(stub.requests) == 1
    await socket.disconnect()
    await watcher.disconnect()


async def test_a_send_to_the_idle_conversation_with_messages_waiting_is_refused_and_stores_nothing(
    user, chat, stub, manager
):
    await sync_to_async(PendingMessage.objects.create)(conversation=chat, content="waiting")
    await disable_endpoint()
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "more"})
    frames = await until(socket, "error")
    assert [frame["type"] for frame in frames] == ["error"]
    assert frames[0]["code"] == "model_unavailable"
    await socket.disconnect()
    assert await state(chat) == ([], ["waiting"], [])
    assert stub.requests == []
