"""``/api/conversations/`` and ``/api/profiles/``: CRUD, ownership, validation, transcript."""

from __future__ import annotations

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):
    return ensure_demo_profile()


def test_profiles_lists_the_enabled_profiles_by_slug(api, demo):
    body = api.get("/api/profiles/").json()
    assert [p["slug"] for p in body["results"]] == [demo.slug]
    assert set(body["results"][0]) >= {"slug", "name", "model", "limit", "context_window"}


def test_create_uses_the_default_profile_and_answers_the_body(api, alice, demo):
    response = api.post("/api/conversations/", {"title": "  Trip  plans "}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["title"] == "Trip plans" and body["profile"] == demo.slug
    assert body["usage"] == {
        "prompt": 0,
        "completion": 0,
        "total": 0,
        "cache_read": 0,
        "cache_write": 0,
        "reasoning": 0,
        "cost": None,
    }
    assert body["context"]["window"] == demo.context_window
    assert Conversation.objects.get(pk=body["id"]).owner == alice


def test_create_with_an_unknown_profile_is_a_field_error_and_stores_nothing(api, demo):
    response = api.post("/api/conversations/", {"profile": "nope"}, format="json")
    assert response.status_code == 400
    assert "profile" in response.json()["errors"]
    assert Conversation.objects.count() == 0


def test_list_is_newest_first_and_only_the_users_own(api, alice, bob, demo):
    first = Conversation.objects.create(owner=alice, title="one", profile=demo)
    second = Conversation.objects.create(owner=alice, title="two", profile=demo)
    Conversation.objects.create(owner=bob, title="bob's", profile=demo)
    ids = [c["id"] for c in api.get("/api/conversations/").json()["results"]]
    assert ids == [str(second.pk), str(first.pk)]


def test_another_users_conversation_is_a_404_for_every_method(api, bob, demo):
    theirs = Conversation.objects.create(owner=bob, title="secret", profile=demo)
    url = f"/api/conversations/{theirs.pk}/"
    assert api.get(url).status_code == 404
    assert api.patch(url, {"title": "mine"}, format="json").status_code == 404
    assert api.delete(url).status_code == 404
    assert api.get(url + "messages/").status_code == 404
    assert api.post(url + "messages/", {"content": "hi"}, format="json").status_code == 404
    theirs.refresh_from_db()
    assert theirs.title == "secret" and not Message.objects.exists()


def test_patch_renames_and_delete_removes(api, alice, demo):
    mine = Conversation.objects.create(owner=alice, title="old", profile=demo)
    url = f"/api/conversations/{mine.pk}/"
    assert api.patch(url, {"title": "new"}, format="json").json()["title"] == "new"
    assert api.patch(url, {"title": ""}, format="json").status_code == 400
    assert api.delete(url).status_code == 204
    assert not Conversation.objects.filter(pk=mine.pk).exists()


def test_unauthenticated_requests_are_401(client, demo):
    assert client.get("/api/conversations/").status_code == 401
    assert client.get("/api/profiles/").status_code == 401


def test_a_form_body_is_415(api, demo):
    response = api.post("/api/conversations/", {"title": "x"})  # multipart by default
    assert response.status_code == 415


def test_messages_lists_the_transcript_and_pages_back(api, alice, demo):
    mine = Conversation.objects.create(owner=alice, title="t", profile=demo)
    for position in range(4):
        Message.objects.create(
            conversation=mine,
            position=position,
            message_id=f"m{position}",
            role="user" if position % 2 == 0 else "assistant",
            content=f"text {position}",
        )
    body = api.get(f"/api/conversations/{mine.pk}/messages/").json()
    assert [m["id"] for m in body["messages"]] == ["m0", "m1", "m2", "m3"]
    assert body["earlier"] == 0 and body["sections"] == []
    page = api.get(f"/api/conversations/{mine.pk}/messages/?before=m2").json()
    assert [m["id"] for m in page["messages"]] == ["m0", "m1"]


def test_message_validation_errors_are_field_errors_and_store_nothing(api, alice, demo, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_MESSAGE_CHARS": 10}
    mine = Conversation.objects.create(owner=alice, title="t", profile=demo)
    url = f"/api/conversations/{mine.pk}/messages/"
    too_long = api.post(url, {"content": "x" * 11}, format="json")
    assert too_long.status_code == 400 and "content" in too_long.json()["errors"]
    empty = api.post(url, {"content": "   "}, format="json")
    assert empty.status_code == 400 and "content" in empty.json()["errors"]
    bad_image = api.post(url, {"content": "hi", "images": ["not-base64!"]}, format="json")
    assert bad_image.status_code == 400 and "images" in bad_image.json()["errors"]
    wrong_type = api.post(url, {"content": 5, "images": "x"}, format="json")
    assert wrong_type.status_code == 400
    assert not Message.objects.exists()


def test_search_finds_titles_and_messages_of_the_users_own(api, alice, bob, demo):
    hit = Conversation.objects.create(owner=alice, title="Lisbon trip", profile=demo)
    Conversation.objects.create(owner=alice, title="other", profile=demo)
    Conversation.objects.create(owner=bob, title="Lisbon too", profile=demo)
    found = api.get("/api/conversations/search/?q=lisbon").json()["results"]
    assert [c["id"] for c in found] == [str(hit.pk)]
    assert api.get("/api/conversations/search/").status_code == 400


def test_compact_with_nothing_to_fold_is_409(api, alice, demo):
    mine = Conversation.objects.create(owner=alice, title="t", profile=demo)
    response = api.post(f"/api/conversations/{mine.pk}/compact/", {}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "nothing_to_compact"


def test_the_schema_and_the_docs_page_are_served(api, client):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/conversations/{id}/messages/" in paths and "/api/runs/{id}/events/" in paths
    docs = api.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    assert b"cdn.jsdelivr" not in docs.content  # the assets are served locally
