"""Pending messages taken back keep their images: ``pending_pop`` answers their texts in
``taken`` and their images in ``attachments``, waiting on the conversation again, which a next
``send`` names; nothing is lost on the way."""

from __future__ import annotations

import base64
import uuid

import pytest
from asgiref.sync import sync_to_async

from conversations.models import Attachment, Message, PendingMessage, Run

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"png-bytes" * 8).decode()
GIF = base64.b64encode(b"GIF89a" + b"gif-bytes" * 8).decode()
WEBP = base64.b64encode(b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"webp" * 8).decode()


@sync_to_async
def attachments(conversation) -> dict[str, str]:
    return dict(Attachment.objects.filter(conversation=conversation).values_list("id", "data"))


@sync_to_async
def user_messages(conversation) -> list[tuple[str, list[str]]]:
    rows = Message.objects.filter(conversation=conversation, role="user").order_by("position")
    return [(row.content, list(row.images or [])) for row in rows]


async def test_taking_pending_messages_back_gives_their_images_back_as_attachments(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "one"})
    await until(socket, "started")
    # While the answer runs, three messages wait: two of them with images.
    for content, images in (("look at this", [PNG]), ("and this", []), ("", [GIF, WEBP])):
        await socket.send_json_to({"type": "send", "content": content, "images": images})
        await until(socket, "pending")

    await socket.send_json_to({"type": "pending_pop"})
    frame = (await until(socket, "pending"))[-1]
    while not frame["taken"]:
        frame = (await until(socket, "pending"))[-1]

    assert frame["messages"] == []
    assert frame["taken"] == ["look at this", "and this", ""]
    kept = frame["attachments"]
    assert [(a["message"], a["mime"]) for a in kept] == [
        (0, "image/png"),
        (2, "image/gif"),
        (2, "image/webp"),
    ]
    assert [a["size"] for a in kept] == [len(base64.b64decode(image)) for image in (PNG, GIF, WEBP)]
    # Stored: the queue is empty, every image waits as the conversation's attachment.
    assert not await sync_to_async(PendingMessage.objects.exists)()
    waiting = await attachments(conversation)
    assert [waiting[uuid.UUID(a["id"])] for a in kept] == [PNG, GIF, WEBP]

    await socket.send_json_to({"type": "abort"})
    await until(socket, "finish")
    await manager.drain()
    assert await sync_to_async(Run.objects.filter(conversation=conversation).count)() == 1

    # The composer sends them again: the same images reach the stored message, in order.
    await socket.send_json_to(
        {
            "type": "send",
            "content": "look at this\n\nand this",
            "attachments": [a["id"] for a in kept],
        }
    )
    await until(socket, "finish")
    await socket.disconnect()
    assert (await user_messages(conversation))[-1] == (
        "look at this\n\nand this",
        [PNG, GIF, WEBP],
    )
    assert await attachments(conversation) == {}


async def test_every_other_tab_sees_the_queue_empty_and_nothing_of_what_was_taken(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    socket, _ = await connect(user, conversation)
    other, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "one"})
    await until(socket, "started")
    await socket.send_json_to({"type": "send", "content": "pic", "images": [PNG]})
    await until(socket, "pending")
    await until(other, "pending")
    await socket.send_json_to({"type": "pending_pop"})
    emptied = (await until(other, "pending"))[-1]
    assert emptied["messages"] == [] and emptied["taken"] == [] and emptied["attachments"] == []
    await socket.send_json_to({"type": "abort"})
    await until(socket, "finish")
    await manager.drain()
    await socket.disconnect()
    await other.disconnect()
