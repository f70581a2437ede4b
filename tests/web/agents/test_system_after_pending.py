"""A tool's system payload reaches the model after the complete tool batch AND the messages the
person sent meanwhile (seed 004), whichever door they came through; stored in that order."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, ApiKey, ProviderEndpoint, Tool
from agents.runs import run_manager
from conversations.models import Conversation, Message, PendingMessage
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

NOTICE = "The quota is nearly used."


@pytest.fixture
def chat(user, stub, loopback, settings) -> Conversation:
    """A profile whose HTTP tool answers a JSON body with a system field (``/notice``)."""
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]}
    loopback.body = {"id": 1, "notice": NOTICE}
    ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=f"{stub.url}/v1")
    profile = AgentProfile.objects.create(slug="items", name="Items", model="stub/m")
    tool = Tool(
        name="items",
        kind=Tool.Kind.HTTP,
        url_template=f"{loopback.url}/items",
        parameters={"type": "object", "properties": {}},
        description="Look up items.",
        system_field="/notice",
    )
    tool.full_clean()
    tool.save()
    profile.tools.set([tool])
    return Conversation.objects.create(owner=user, title="Items", profile=profile)


async def queue_over_rest(user, chat, text: str) -> None:
    key = await sync_to_async(lambda: ApiKey.objects.issue(user=user, name="t")[1])()
    client = AsyncClient(authorization=f"Bearer {key}")
    response = await client.post(
        f"/api/conversations/{chat.pk}/messages/",
        {"content": text},
        content_type="application/json",
    )
    assert response.status_code == 202 and response.json()["pending"][0]["content"] == text


@pytest.mark.parametrize("door", ["websocket", "rest"])
async def test_system_texts_come_after_the_messages_sent_meanwhile(user, chat, stub, request, door):
    # Over REST the process's own run manager serves both doors (the socket follows it).
    manager = request.getfixturevalue("manager") if door == "websocket" else run_manager
    gate = threading.Event()
    stub.enqueue(
        reply("openai", calls=[("c1", "items", {})], gate=gate),
        reply("openai", ["Noted both."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "check the items"})
    await until(socket, "started")
    # The first turn is still streaming: this waits as pending and joins the next request.
    if door == "websocket":
        await socket.send_json_to({"type": "send", "content": "and my quota?"})
    else:
        await queue_over_rest(user, chat, "and my quota?")
    await until(socket, "pending")
    gate.set()
    await until(socket, "finish")
    await socket.disconnect()
    await manager.quiet()

    sent = stub.requests[1].json()["messages"]
    assert [m["role"] for m in sent[-4:]] == ["assistant", "tool", "user", "system"]
    assert sent[-2]["content"] == "and my quota?" and sent[-1]["content"] == NOTICE
    stored = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation=chat)
            .order_by("position")
            .values_list("role", "content")
        )
    )()
    assert [role for role, _ in stored] == [
        "user",
        "assistant",
        "tool",
        "user",
        "system",
        "assistant",
    ]
    assert stored[3:5] == [("user", "and my quota?"), ("system", NOTICE)]
    assert not await sync_to_async(PendingMessage.objects.exists)()
