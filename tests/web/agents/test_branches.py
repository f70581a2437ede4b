"""Regenerate, edit and choose alternatives over the chat socket: the model sees the chosen
branch only, a choice is durable, and nothing branches while a run is going."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(user, stub) -> Conversation:
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/m")
    return Conversation.objects.create(owner=user, title="branches", profile=profile)


def seen(stub: Any, request: int) -> list[tuple[str, str]]:
    """What the model received on request ``request``: (role, content), system prompt aside."""
    return [
        (m["role"], m["content"])
        for m in stub.requests[request].json()["messages"]
        if m["role"] != "system"
    ]


def shown(state: dict[str, Any]) -> list[str]:
    return [m["content"] for m in state["messages"]]


async def ask(socket: Any, content: str) -> list[dict[str, Any]]:
    await socket.send_json_to({"type": "send", "content": content})
    return await until(socket, "finish")


async def resynced(socket: Any) -> dict[str, Any]:
    """After a ``branches`` frame, the fresh state a client asks for."""
    await socket.send_json_to({"type": "resync"})
    return (await until(socket, "state"))[-1]


async def test_a_regenerated_answer_is_an_alternative_and_the_model_sees_only_the_chosen_one(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", ["First answer."]),
        reply("openai", ["Second answer."]),
        reply("openai", ["Going on from the first."]),
    )
    socket, _ = await connect(user, chat)
    await ask(socket, "hello")
    first = (await resynced(socket))["messages"]
    await socket.send_json_to({"type": "regenerate", "message": first[1]["id"]})
    frames = await until(socket, "finish")
    assert any(f["type"] == "branches" for f in frames)
    # The second request is the same turn again: the first answer is not in it.
    assert seen(stub, 1) == [("user", "hello")]
    state = await resynced(socket)
    assert shown(state) == ["hello", "Second answer."]
    assert state["branches"] == [
        {
            "point": first[0]["id"],
            "message": state["messages"][1]["id"],
            "index": 2,
            "count": 2,
            "error": "",
        }
    ]

    await socket.send_json_to({"type": "select_branch", "point": first[0]["id"], "index": 1})
    chosen = (await until(socket, "branches"))[-1]
    assert chosen["branches"][0]["index"] == 1
    await socket.disconnect()

    # Durable: a new socket (a reload) shows the chosen answer, and the next turn follows it.
    again, state = await connect(user, chat)
    assert shown(state) == ["hello", "First answer."]
    await ask(again, "and then?")
    await again.disconnect()
    assert seen(stub, 2) == [
        ("user", "hello"),
        ("assistant", "First answer."),
        ("user", "and then?"),
    ]
    stored = await sync_to_async(Message.every.filter(conversation=chat).count)()
    assert stored == 5  # hello, both answers, the next question and its answer


async def test_an_edited_message_branches_from_it_and_the_old_turns_come_back(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", ["A1"]),
        reply("openai", ["A2"]),
        reply("openai", ["B1"]),
    )
    socket, _ = await connect(user, chat)
    await ask(socket, "one")
    await ask(socket, "two")
    before = (await resynced(socket))["messages"]
    await socket.send_json_to({"type": "edit", "message": before[0]["id"], "content": " uno "})
    frames = await until(socket, "finish")
    started = next(f for f in frames if f["type"] == "started")
    assert started["message"]["content"] == "uno"
    assert seen(stub, 2) == [("user", "uno")]
    state = await resynced(socket)
    assert shown(state) == ["uno", "B1"]
    assert state["branches"][0] | {"message": None} == {
        "point": "",
        "message": None,
        "index": 2,
        "count": 2,
        "error": "",
    }
    assert state["branches"][0]["message"] == started["message"]["id"]

    await socket.send_json_to({"type": "select_branch", "point": "", "index": 1})
    await until(socket, "branches")
    assert shown(await resynced(socket)) == ["one", "A1", "two", "A2"]
    await socket.disconnect()


async def test_nothing_branches_while_an_answer_runs(user, chat, stub, manager):
    stub.enqueue(reply("openai", ["First."]))
    socket, _ = await connect(user, chat)
    await ask(socket, "hello")
    messages = (await resynced(socket))["messages"]
    gate = threading.Event()
    stub.enqueue(reply("openai", ["Second."], gate=gate), reply("openai", ["Third."]))
    await socket.send_json_to({"type": "regenerate", "message": messages[0]["id"]})
    await until(socket, "started")
    for frame in (
        {"type": "regenerate", "message": messages[0]["id"]},
        {"type": "edit", "message": messages[0]["id"], "content": "hi"},
        {"type": "select_branch", "point": messages[0]["id"], "index": 1},
    ):
        await socket.send_json_to(frame)
        refused = (await until(socket, "error"))[-1]
        assert refused["code"] == "busy", frame
    gate.set()
    await until(socket, "finish")
    await socket.send_json_to({"type": "regenerate", "message": "not-a-message"})
    assert (await until(socket, "error"))[-1]["code"] == "not_found"
    await socket.disconnect()
    assert len(stub.requests) == 2
