"""The conversation pages: login, list, search, create, rename, delete."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from conversations.models import Conversation

pytestmark = pytest.mark.django_db


def test_every_page_sends_anonymous_users_to_login(alice):
    conversation = Conversation.objects.create(owner=alice)
    client = Client()
    login = reverse("login")
    pages = [
        ("get", reverse("conversations:list")),
        ("get", reverse("conversations:chat", args=[conversation.pk])),
        ("post", reverse("conversations:create")),
        ("post", reverse("conversations:rename", args=[conversation.pk])),
        ("post", reverse("conversations:delete", args=[conversation.pk])),
        ("get", reverse("workspaces:files", args=[conversation.pk])),
        ("get", reverse("workspaces:file", args=[conversation.pk])),
        ("get", reverse("workspaces:image", args=[conversation.pk])),
        ("post", reverse("workspaces:upload", args=[conversation.pk])),
    ]
    for method, url in pages:
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(login + "?next="), url
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_login_page_signs_in_and_logout_needs_post(alice):
    client = Client()
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert b'name="username"' in page.content
    response = client.post(
        reverse("login"), {"username": "alice", "password": "alice-pass-123", "next": "/"}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get(reverse("conversations:list")).status_code == 200
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("conversations:list")).status_code == 302


def test_login_with_a_wrong_password_shows_an_error(alice):
    response = Client().post(reverse("login"), {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_only_staff_see_the_admin_link(alice, alice_client):
    assert b'data-testid="admin-link"' not in alice_client.get("/").content
    staff = get_user_model().objects.create_user("carol", password="x", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert b'data-testid="admin-link"' in client.get("/").content


def test_list_shows_only_the_users_conversations_newest_first(alice, bob, alice_client):
    older = Conversation.objects.create(owner=alice, title="Older chat")
    newer = Conversation.objects.create(owner=alice, title="Newer chat")
    Conversation.objects.create(owner=bob, title="Bob's secret")
    # Touch ``newer`` again so its activity is the most recent.
    newer.save()
    response = alice_client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Bob&#x27;s secret" not in page and "Bob's secret" not in page
    assert page.index("Newer chat") < page.index("Older chat")
    assert [c.pk for c in response.context["page"]] == [newer.pk, older.pk]


def test_untitled_conversations_show_their_first_user_message(alice, alice_client, add_message):
    conversation = Conversation.objects.create(owner=alice)
    add_message(conversation, "user", "How do tides work?")
    add_message(conversation, "assistant", "The moon.")
    assert "How do tides work?" in alice_client.get("/").content.decode()


def test_search_matches_titles_and_message_content_of_own_conversations_only(
    alice, bob, alice_client, add_message
):
    by_title = Conversation.objects.create(owner=alice, title="Tomato garden")
    by_message = Conversation.objects.create(owner=alice, title="Misc")
    add_message(by_message, "assistant", "Plant the TOMATOES in spring.")
    unrelated = Conversation.objects.create(owner=alice, title="Taxes")
    add_message(unrelated, "user", "What about deductions?")
    bobs = Conversation.objects.create(owner=bob, title="Bob tomato")
    add_message(bobs, "user", "tomato soup")

    response = alice_client.get("/", {"q": "tomato"})
    found = {c.pk for c in response.context["page"]}
    assert found == {by_title.pk, by_message.pk}
    assert bobs.pk not in found and unrelated.pk not in found

    response = alice_client.get("/", {"q": "nothing-like-this"})
    assert list(response.context["page"]) == []
    assert "No conversation matches" in response.content.decode()


def test_search_lists_a_conversation_once_when_several_messages_match(
    alice, alice_client, add_message
):
    conversation = Conversation.objects.create(owner=alice, title="Cooking")
    for _ in range(3):
        add_message(conversation, "user", "pasta again")
    assert [c.pk for c in alice_client.get("/", {"q": "pasta"}).context["page"]] == [
        conversation.pk
    ]


def test_new_conversation_form_lists_enabled_profiles_with_the_default_selected(
    alice_client, default_profile, make_profile
):
    make_profile("writer", name="Writer")
    make_profile("retired", name="Retired", enabled=False)
    page = alice_client.get("/").content.decode()
    assert 'data-testid="profile-select"' in page
    assert 'data-testid="new-conversation"' in page
    assert f'<option value="{default_profile.pk}" selected>Helper</option>' in page
    assert ">Writer</option>" in page
    assert "Retired" not in page


def test_create_with_the_default_profile_opens_the_chat(alice, alice_client, default_profile):
    response = alice_client.post(reverse("conversations:create"), {"profile": "", "title": ""})
    conversation = Conversation.objects.get(owner=alice)
    assert response.status_code == 302
    assert response["Location"] == reverse("conversations:chat", args=[conversation.pk])
    assert conversation.profile == default_profile
    assert conversation.title == ""


def test_create_with_a_chosen_profile_and_title(alice, alice_client, default_profile, make_profile):
    writer = make_profile("writer", name="Writer")
    alice_client.post(
        reverse("conversations:create"), {"profile": str(writer.pk), "title": "  My   draft "}
    )
    conversation = Conversation.objects.get(owner=alice)
    assert conversation.profile == writer
    assert conversation.title == "My draft"


def test_create_refuses_a_disabled_profile(alice, alice_client, default_profile, make_profile):
    retired = make_profile("retired", enabled=False)
    response = alice_client.post(reverse("conversations:create"), {"profile": str(retired.pk)})
    assert response.status_code == 400
    assert not Conversation.objects.filter(owner=alice).exists()


def test_create_refuses_get(alice_client):
    assert alice_client.get(reverse("conversations:create")).status_code == 405


def test_rename_own_conversation(alice, alice_client):
    conversation = Conversation.objects.create(owner=alice, title="Old")
    response = alice_client.post(
        reverse("conversations:rename", args=[conversation.pk]), {"title": "New name"}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    conversation.refresh_from_db()
    assert conversation.title == "New name"


def test_rename_returns_to_a_local_next_page_only(alice, alice_client):
    conversation = Conversation.objects.create(owner=alice, title="Old")
    url = reverse("conversations:rename", args=[conversation.pk])
    chat = reverse("conversations:chat", args=[conversation.pk])
    assert alice_client.post(url, {"title": "A", "next": chat})["Location"] == chat
    assert (
        alice_client.post(url, {"title": "B", "next": "https://evil.example/"})["Location"] == "/"
    )


def test_rename_to_an_empty_title_changes_nothing(alice, alice_client):
    conversation = Conversation.objects.create(owner=alice, title="Keep me")
    response = alice_client.post(
        reverse("conversations:rename", args=[conversation.pk]), {"title": "   "}, follow=True
    )
    conversation.refresh_from_db()
    assert conversation.title == "Keep me"
    assert "This field is required." in response.content.decode()


def test_rename_and_delete_of_another_users_conversation_are_404(alice, bob, alice_client):
    bobs = Conversation.objects.create(owner=bob, title="Bob's")
    rename = alice_client.post(reverse("conversations:rename", args=[bobs.pk]), {"title": "Hi"})
    delete = alice_client.post(reverse("conversations:delete", args=[bobs.pk]))
    assert rename.status_code == 404 and delete.status_code == 404
    bobs.refresh_from_db()
    assert bobs.title == "Bob's"


def test_delete_own_conversation_removes_its_messages(alice, alice_client, add_message):
    conversation = Conversation.objects.create(owner=alice, title="Bye")
    add_message(conversation, "user", "hello")
    response = alice_client.post(reverse("conversations:delete", args=[conversation.pk]))
    assert response.status_code == 302 and response["Location"] == "/"
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert not conversation.messages.exists()


def test_delete_needs_post(alice, alice_client):
    conversation = Conversation.objects.create(owner=alice)
    url = reverse("conversations:delete", args=[conversation.pk])
    assert alice_client.get(url).status_code == 405
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_chat_page_of_another_user_or_unknown_id_is_404(alice, bob, alice_client):
    bobs = Conversation.objects.create(owner=bob)
    assert alice_client.get(reverse("conversations:chat", args=[bobs.pk])).status_code == 404
    assert alice_client.get(reverse("conversations:chat", args=[uuid.uuid4()])).status_code == 404
