"""Images attached over HTTP and named by the send frame; client frames stay under 1 MiB."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from agents.consumers import ChatConsumer
from agents.runs import RunManager
from conversations.models import Attachment, Message
from orkestrel.protocol import MAX_FRAME_BYTES
from tests.web.agents.test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2_000_000  # 2 MB: no frame under 1 MiB could carry it


@pytest.fixture
def manager(monkeypatch):
    fresh = RunManager()
    monkeypatch.setattr(ChatConsumer, "manager", fresh)
    return fresh


def attach(user, conversation, data: bytes):
    client = Client()
    client.force_login(user)
    return client.post(
        reverse("conversations:attachments", args=[conversation.pk]),
        {"file": SimpleUploadedFile("shot.png", data, content_type="image/png")},
    )


async def test_an_image_uploaded_over_http_reaches_the_message_named_by_its_id(
    user, conversation, fast_demo, manager
):
    response = await sync_to_async(attach)(user, conversation, PNG)
    assert response.status_code == 201
    attachment = response.json()["attachment"]
    assert attachment["mime"] == "image/png" and attachment["size"] == len(PNG)
    socket, _ = await connect(user, conversation)
    await socket.send_json_to(
        {"type": "send", "content": "look", "attachments": [attachment["id"]]}
    )
    await frames_until(socket, "finish")
    stored = await sync_to_async(Message.objects.get)(conversation=conversation, role="user")
    assert stored.images is not None and len(stored.images) == 1
    # Taken by the message: it cannot be sent twice.
    assert not await sync_to_async(Attachment.objects.exists)()
    await socket.disconnect()


async def test_an_unknown_attachment_is_an_invalid_frame_and_stores_nothing(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    await socket.send_json_to(
        {"type": "send", "content": "x", "attachments": ["00000000-0000-0000-0000-000000000000"]}
    )
    frame = await socket.receive_json_from(timeout=5)
    assert frame["type"] == "error" and frame["code"] == "invalid"
    assert not await sync_to_async(Message.objects.exists)()
    await socket.disconnect()


async def test_a_frame_over_the_limit_is_answered_too_large_and_the_socket_lives(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    await socket.send_to(
        text_data=json.dumps({"type": "send", "content": "x" * (MAX_FRAME_BYTES + 1)})
    )
    frame = await socket.receive_json_from(timeout=5)
    assert frame["type"] == "error" and frame["code"] == "too_large"
    await socket.send_json_to({"type": "resync"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    await socket.disconnect()


def test_an_attachment_that_is_not_an_image_or_too_big_is_refused(user, conversation, settings):
    assert attach(user, conversation, b"plain text").status_code == 400
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_IMAGE_BYTES": 1024}
    assert attach(user, conversation, PNG).status_code == 413
    assert not Attachment.objects.exists()


def test_another_users_conversation_takes_no_attachment(other, conversation):
    assert attach(other, conversation, PNG).status_code == 404
