"""A client flooding the chat websocket: every frame is answered, nothing piles up in the
database, the flooding socket stays usable, and another socket chats meanwhile.

Oversize frames both ways, and each bad frame class once, are pinned by ``test_consumers``,
``test_attachments`` and ``test_framing``; here it is the volume.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents.consumers import ChatConsumer
from agents.routing import websocket_urlpatterns
from agents.runs import RunManager
from conversations.models import Conversation, Message, Run
from conversations.pending import MAX_PENDING

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://testserver")]
WAIT = 15.0  # seconds any one frame may take on a busy 2-core box
SENDS = 500
BAD_FRAMES = 2000
# Small bad frames of several classes, each with the code it must be answered with.
BAD = [
    ("not json", "invalid"),
    ("[1, 2]", "invalid"),
    ('{"type": "dance"}', "unknown_type"),
    ('{"type": ["send"]}', "unknown_type"),
    ('{"type": "send"}', "invalid"),
    ('{"type": "send", "content": "half \\ud83d"}', "invalid"),
    ('{"type": "compact", "focus": 3}', "invalid"),
    ('{"type": "send", "content": "x", "images": "aGk="}', "invalid"),
]


@pytest.fixture
def manager(monkeypatch) -> RunManager:
    """A fresh run manager per test (the process-wide one is a module global)."""
    fresh = RunManager()
    monkeypatch.setattr(ChatConsumer, "manager", fresh)
    return fresh


async def connect(user, conversation) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.id}/", headers=ORIGIN
    )
    socket.scope["user"] = user
    connected, code = await socket.connect()
    assert connected, code
    assert (await socket.receive_json_from(timeout=WAIT))["type"] == "state"
    return socket


async def until(socket: WebsocketCommunicator, kind: str) -> list[dict[str, Any]]:
    frames = []
    while not frames or frames[-1]["type"] != kind:
        frames.append(await socket.receive_json_from(timeout=WAIT))
    return frames


async def chat(socket: WebsocketCommunicator, content: str) -> list[dict[str, Any]]:
    """One whole exchange: the run's frames from ``started`` to ``finish``."""
    await socket.send_json_to({"type": "send", "content": content})
    frames = await until(socket, "finish")
    assert frames[0]["type"] == "started" and frames[-1]["result"]["content"]
    return frames


def _stored(conversation) -> tuple[list[str], int]:
    users = Message.objects.filter(conversation=conversation, role="user")
    return list(users.values_list("content", flat=True)), Run.objects.filter(
        conversation=conversation
    ).count()


async def test_a_flood_of_sends_starts_one_run_queues_a_bounded_few_and_refuses_the_rest(
    user, conversation, demo, manager, settings
):
    # Slow words (about 50 s of answer): the one run outlives the flood even on a loaded
    # machine (10 s did not, beside two other test workers); it is stopped as soon as every
    # send was answered, so the test does not wait.
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 1.0}
    socket = await connect(user, conversation)
    for n in range(SENDS):  # without waiting for any answer
        await socket.send_json_to({"type": "send", "content": f"message {n} " + "word " * 50})
    frames, answered = [], 0
    while answered < SENDS - 1:
        frame = await socket.receive_json_from(timeout=WAIT)
        frames.append(frame)
        answered += frame["type"] == "pending" or (
            frame["type"] == "error" and frame["code"] == "too_many_pending"
        )
    # Take the queue back so that no second run starts, then stop the first.
    await socket.send_json_to({"type": "pending_pop"})
    await socket.send_json_to({"type": "abort"})
    frames += await until(socket, "finish")
    kinds = Counter(f["type"] for f in frames)
    assert kinds["started"] == 1 and frames[0]["message"]["content"].startswith("message 0 ")
    queued = [f for f in frames if f["type"] == "pending" and f["messages"]]
    assert len(queued) == MAX_PENDING and len(queued[-1]["messages"]) == MAX_PENDING
    errors = [f for f in frames if f["type"] == "error"]
    assert len(errors) == SENDS - 1 - MAX_PENDING
    assert {f["code"] for f in errors} == {"too_many_pending"}
    assert frames[-1]["result"]["stop"] == "abort"
    contents, runs = await sync_to_async(_stored)(conversation)
    assert runs == 1 and len(contents) == 1 and contents[0].startswith("message 0 ")
    # The flooded socket still chats.
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    await chat(socket, "after the flood")
    await socket.disconnect()


async def test_a_flood_of_bad_frames_is_answered_in_order_while_another_socket_chats(
    user, conversation, fast_demo, manager
):
    flooder = await connect(user, conversation)
    other = await sync_to_async(Conversation.objects.create)(owner=user, profile=fast_demo)
    neighbour = await connect(user, other)
    sent = [BAD[n % len(BAD)] for n in range(BAD_FRAMES)]
    for text, _ in sent:  # without waiting for any answer
        await flooder.send_to(text_data=text)

    # Another socket of the same process holds a whole conversation meanwhile.
    await asyncio.wait_for(chat(neighbour, "are you still there?"), WAIT)

    answers = [await flooder.receive_json_from(timeout=WAIT) for _ in sent]
    assert [(a["type"], a["code"]) for a in answers] == [("error", code) for _, code in sent]
    assert all(json.loads(json.dumps(a)) == a for a in answers)
    contents, runs = await sync_to_async(_stored)(conversation)
    assert (contents, runs) == ([], 0)
    # Nothing else was queued for the flooder, and it still chats.
    assert await flooder.receive_nothing(timeout=0.1)
    await chat(flooder, "after the flood")
    await flooder.disconnect()
    await neighbour.disconnect()
