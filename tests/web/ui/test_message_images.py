"""A sent message's images, served one by one for the chat's thumbnails: to the conversation's
owner only, as images that can never be read as a page."""

from __future__ import annotations

import base64

import pytest
from django.test import Client
from django.urls import reverse

from conversations.models import Conversation

pytestmark = pytest.mark.django_db

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
GIF = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")


@pytest.fixture
def sent(alice, add_message) -> tuple[Conversation, str]:
    """Alice's conversation with a message sent with a PNG (base64) and a GIF (a data URL)."""
    conversation = Conversation.objects.create(owner=alice, title="Pictures")
    images = [
        base64.b64encode(PNG).decode(),
        "data:image/gif;base64," + base64.b64encode(GIF).decode(),
        base64.b64encode(b"<html><script>alert(1)</script>").decode(),
    ]
    message = add_message(conversation, "user", "what is this?", images=images)
    return conversation, message.message_id


def image_url(conversation: Conversation, message_id: str, index: int) -> str:
    return reverse("workspaces:message_image", args=[conversation.pk, message_id, index])


def test_the_owner_gets_each_image_with_its_type_and_no_sniffing(alice_client, sent):
    conversation, message_id = sent
    first = alice_client.get(image_url(conversation, message_id, 0))
    assert first.status_code == 200
    assert first.content == PNG
    assert first["Content-Type"] == "image/png"
    assert first["X-Content-Type-Options"] == "nosniff"
    assert first["Content-Security-Policy"] == "default-src 'none'"
    assert first["Cache-Control"].startswith("private")
    second = alice_client.get(image_url(conversation, message_id, 1))
    assert (second.status_code, second["Content-Type"], second.content) == (200, "image/gif", GIF)


def test_the_page_links_the_url_the_thumbnails_are_built_from(alice_client, sent):
    conversation, message_id = sent
    page = alice_client.get(reverse("conversations:chat", args=[conversation.pk])).content.decode()
    messages_url = reverse("conversations:messages", args=[conversation.pk])
    assert f'data-messages-url="{messages_url}"' in page
    # chat.js builds `<messages url><message id>/images/<index>/`: this route.
    assert image_url(conversation, message_id, 0) == f"{messages_url}{message_id}/images/0/"


@pytest.mark.parametrize("index", [3, 99])
def test_an_index_past_the_last_image_is_not_found(alice_client, sent, index):
    conversation, message_id = sent
    assert alice_client.get(image_url(conversation, message_id, index)).status_code == 404


def test_bytes_that_are_not_an_image_are_never_served(alice_client, sent):
    conversation, message_id = sent
    assert alice_client.get(image_url(conversation, message_id, 2)).status_code == 404


def test_an_unknown_message_is_not_found(alice_client, sent):
    conversation, _ = sent
    assert alice_client.get(image_url(conversation, "nope", 0)).status_code == 404


def test_another_users_image_is_not_found_and_a_visitor_is_sent_to_sign_in(bob, sent):
    conversation, message_id = sent
    other = Client()
    other.force_login(bob)
    assert other.get(image_url(conversation, message_id, 0)).status_code == 404
    anonymous = Client().get(image_url(conversation, message_id, 0))
    assert anonymous.status_code == 302
    assert reverse("login") in anonymous["Location"]
