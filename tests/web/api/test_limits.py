"""Request size limits of the API: 413 before the body is read, big images within the limit."""

from __future__ import annotations

import base64

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation, Message

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def test_a_body_over_the_request_limit_is_413_and_stores_nothing(api, alice, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_REQUEST_BYTES": 1000}
    ensure_demo_profile()
    mine = Conversation.objects.create(owner=alice, title="t")
    response = api.post(
        f"/api/conversations/{mine.pk}/messages/", {"content": "x" * 2000}, format="json"
    )
    assert response.status_code == 413
    assert response.json() == {
        "type": "about:blank",
        "title": "Content Too Large",
        "status": 413,
        "detail": "The request body is larger than 1000 bytes.",
        "code": "too_large",
    }
    assert not Message.objects.exists()


def test_an_image_over_the_image_limit_is_a_field_error(api, alice, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_IMAGE_BYTES": 1024}
    ensure_demo_profile()
    mine = Conversation.objects.create(owner=alice, title="t")
    image = base64.b64encode(PNG + b"\x00" * 4096).decode()
    response = api.post(
        f"/api/conversations/{mine.pk}/messages/",
        {"content": "look", "images": [image]},
        format="json",
    )
    assert response.status_code == 400 and "images" in response.json()["errors"]
    assert not Message.objects.exists()


def test_a_body_larger_than_djangos_form_limit_is_still_read(api, alice):
    # Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) is for forms; a message may carry images
    # of 5 MB each. Over the message's character limit this is a field error, not a crash.
    ensure_demo_profile()
    mine = Conversation.objects.create(owner=alice, title="t")
    response = api.post(
        f"/api/conversations/{mine.pk}/messages/", {"content": "x" * 3_000_000}, format="json"
    )
    assert response.status_code == 400 and "content" in response.json()["errors"]
