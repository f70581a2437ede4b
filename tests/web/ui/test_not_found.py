"""An address that leads nowhere answers with the app's own 404 page (templates/404.html), in
the site's frame with a way back, not Django's bare one; the favicon is the site's file."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def debug_off(settings) -> None:
    settings.DEBUG = False  # Django renders 404.html only then (as a served site runs)


def test_an_unknown_chat_is_the_apps_404_page(alice_client):
    response = alice_client.get(f"/c/{uuid.uuid4()}/")
    assert response.status_code == 404
    page = response.content.decode()
    assert 'data-testid="not-found"' in page
    assert 'class="site-header"' in page and "/static/orkestrel/chat.css" in page
    assert 'href="/"' in page  # back to the conversations


def test_another_users_chat_is_the_same_404(bob, alice, make_profile):
    from conversations.models import Conversation

    conversation = Conversation.objects.create(owner=alice, title="Private")
    other = Client()
    other.force_login(bob)
    response = other.get(f"/c/{conversation.pk}/")
    assert response.status_code == 404
    assert 'data-testid="not-found"' in response.content.decode()
    assert "Private" not in response.content.decode()


def test_an_unknown_path_is_the_404_page_for_a_visitor_too():
    response = Client().get("/no/such/page/")
    assert response.status_code == 404
    assert 'data-testid="not-found"' in response.content.decode()


def test_every_page_names_the_static_favicon(alice_client):
    page = alice_client.get("/").content.decode()
    assert '<link rel="icon" href="/static/orkestrel/favicon.svg" type="image/svg+xml">' in page
    favicon = Path(django_settings.BASE_DIR) / "static" / "orkestrel" / "favicon.svg"
    assert favicon.read_text().startswith("<svg ")
