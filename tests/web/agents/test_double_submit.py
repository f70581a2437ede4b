"""An identical submission right after the previous one is ignored (an accidental double
submit): nothing is stored or run, through the socket and the REST API alike."""

from __future__ import annotations

import base64
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import ApiKey
from agents.runs import run_service
from conversations.models import Message, PendingMessage, Run

from .test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
GIF = base64.b64encode(b"GIF89a" + b"\x00" * 16).decode()


def counts(conversation) -> tuple[int, int]:
    users = Message.objects.filter(conversation=conversation, role="user").count()
    return users, Run.objects.filter(conversation=conversation).count()


async def test_over_the_socket_a_repeat_right_after_is_refused_as_a_duplicate(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "hello", "nonce": "n1"})
    first = await frames_until(socket, "finish")
    await socket.send_json_to({"type": "send", "content": " hello \n", "nonce": "n2"})
    refused = (await frames_until(socket, "error"))[-1]
    assert refused["code"] == "duplicate" and refused.get("run") is None
    assert await sync_to_async(counts)(conversation) == (1, 1)
    # Once another message came in between, the same text is a new message.
    for n, text in ((3, "something else"), (4, "hello")):
        await socket.send_json_to({"type": "send", "content": text, "nonce": f"n{n}"})
        started = (await frames_until(socket, "finish"))[0]
        assert (started["type"], started["nonce"]) == ("started", f"n{n}")
        assert started["run"] != first[0]["run"]
    await socket.disconnect()
    assert await sync_to_async(counts)(conversation) == (3, 3)


async def test_the_same_text_after_the_window_is_a_new_message(
    user, conversation, fast_demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DOUBLE_SUBMIT_SECONDS": 0}
    socket, _ = await connect(user, conversation)
    for nonce in ("n1", "n2"):
        await socket.send_json_to({"type": "send", "content": "again", "nonce": nonce})
        assert (await frames_until(socket, "finish"))[0]["nonce"] == nonce
    await socket.disconnect()
    assert await sync_to_async(counts)(conversation) == (2, 2)


async def test_a_repeat_of_a_queued_message_is_not_queued_twice(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "a long first answer"})
    await frames_until(socket, "started")
    await socket.send_json_to({"type": "send", "content": "and then", "nonce": "q1"})
    queued = (await frames_until(socket, "pending"))[-1]
    assert [message["nonce"] for message in queued["messages"]] == ["q1"]
    await socket.send_json_to({"type": "send", "content": "and then", "nonce": "q2"})
    assert (await frames_until(socket, "error"))[-1]["code"] == "duplicate"
    waiting = PendingMessage.objects.filter(conversation=conversation).count
    assert await sync_to_async(waiting)() == 1
    # Taken back, then stopped: no run is left going after the test.
    await socket.send_json_to({"type": "pending_pop"})
    taken: list[str] = []
    while not taken:  # every tab hears the queue emptied; this socket also gets the texts
        taken = (await frames_until(socket, "pending"))[-1]["taken"]
    assert taken == ["and then"]
    await socket.send_json_to({"type": "abort"})
    await frames_until(socket, "finish")
    await manager.wait(str(conversation.id))
    await socket.disconnect()


async def post(client: AsyncClient, conversation, body: dict) -> tuple[int, dict]:
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        body,
        content_type="application/json",
    )
    raw = (
        b"".join([chunk async for chunk in response.streaming_content])
        if response.streaming
        else response.content
    )
    return response.status_code, json.loads(raw)


async def test_over_rest_a_repeat_answers_the_first_message_and_its_run(
    user, conversation, fast_demo
):
    key = (await sync_to_async(ApiKey.objects.issue)(user=user, name="double"))[1]
    client = AsyncClient(authorization=f"Bearer {key}")
    status, run = await post(client, conversation, {"content": "look", "images": [PNG]})
    assert status == 200 and run["status"] == "done"
    status, repeat = await post(client, conversation, {"content": "look ", "images": [PNG]})
    stored = await sync_to_async(
        lambda: Message.objects.get(conversation=conversation, role="user").message_id
    )()
    assert status == 200 and repeat["duplicate"] is True
    assert (repeat["message"]["id"], repeat["message"]["images_count"]) == (stored, 1)
    assert repeat["run"]["id"] == run["id"]
    assert await sync_to_async(counts)(conversation) == (1, 1)
    # Other images make it another message.
    status, other = await post(client, conversation, {"content": "look", "images": [GIF]})
    assert status == 200 and "duplicate" not in other and other["id"] != run["id"]
    assert await sync_to_async(counts)(conversation) == (2, 2)
    await run_service.manager.drain()
