"""``DELETE /api/conversations/{id}/pending/`` gives the messages' images back as attachments
a next message names: nothing taken back is lost."""

from __future__ import annotations

import json
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Attachment, Conversation, Message, PendingMessage
from tests.web.agents.test_pending_images import GIF, PNG, WEBP

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waiting(alice, settings) -> Conversation:
    """A conversation with three messages waiting for its next run, two with images."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    conversation = Conversation.objects.create(
        owner=alice, title="queued", profile=ensure_demo_profile()
    )
    for content, images in (("first", [PNG, GIF]), ("second", []), ("third", [WEBP])):
        PendingMessage.objects.create(conversation=conversation, content=content, images=images)
    return conversation


async def test_taken_back_images_wait_as_attachments_a_next_message_names(alice_key, waiting):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    base = f"/api/conversations/{waiting.pk}"

    response = await client.delete(f"{base}/pending/")

    assert response.status_code == 200
    body = response.json()
    assert body["taken"] == ["first", "second", "third"]
    assert [(a["message"], a["mime"]) for a in body["attachments"]] == [
        (0, "image/png"),
        (0, "image/gif"),
        (2, "image/webp"),
    ]
    assert not await sync_to_async(PendingMessage.objects.exists)()
    stored = await sync_to_async(
        lambda: dict(Attachment.objects.filter(conversation=waiting).values_list("id", "data"))
    )()
    assert [stored[uuid.UUID(a["id"])] for a in body["attachments"]] == [PNG, GIF, WEBP]
    assert (await client.get(f"{base}/pending/")).json() == {"pending": []}

    sent = await client.post(
        f"{base}/messages/?wait=true",
        {"content": "first, third", "attachments": [a["id"] for a in body["attachments"]]},
        content_type="application/json",
    )
    raw = b"".join([c async for c in sent.streaming_content]) if sent.streaming else sent.content
    assert sent.status_code == 200, raw
    assert json.loads(raw)["status"] == "done"
    message = await sync_to_async(lambda: Message.objects.get(conversation=waiting, role="user"))()
    assert (message.content, message.images) == ("first, third", [PNG, GIF, WEBP])
    assert not await sync_to_async(Attachment.objects.exists)()


async def test_taking_back_an_empty_queue_answers_nothing(alice, alice_key, settings):
    conversation = await sync_to_async(Conversation.objects.create)(owner=alice, title="t")
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.delete(f"/api/conversations/{conversation.pk}/pending/")
    assert response.json() == {"taken": [], "attachments": []}
