"""The chat page: its controls and the embedded state the browser renders the transcript from
(``tests/e2e/test_transcript.py`` checks the rendering), and the JSON views it pages with."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from conversations.models import Conversation, Section

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(alice, default_profile):
    return Conversation.objects.create(owner=alice, title="Chat", profile=default_profile)


def embedded_state(page: str) -> dict:
    match = re.search(r'<script id="chat-state" type="application/json">(.*?)</script>', page, re.S)
    assert match, "json_script block missing"
    return json.loads(match.group(1))


def chat(client, conversation) -> str:
    response = client.get(reverse("conversations:chat", args=[conversation.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_page_has_the_stable_test_ids_and_accessible_controls(alice_client, conversation):
    page = chat(alice_client, conversation)
    for test_id in (
        "message-input",
        "send",
        "stop",
        "usage",
        "context-meter",
        "workspace-files",
        "upload-input",
    ):
        assert f'data-testid="{test_id}"' in page, test_id
    assert '<label for="message-input"' in page
    assert '<label for="upload-input"' in page
    # The Stop button exists but stays hidden until a run streams.
    assert re.search(r'<button type="button"[^>]*data-testid="stop" hidden>', page)
    assert 'type="module" src="/static/orkestrel/chat.js"' in page


def test_sections_are_in_the_state_and_their_originals_load_from_their_url(
    alice_client, conversation, add_message
):
    section = Section.objects.create(
        conversation=conversation, section_id="s1", position=0, summary="They discussed **tides**."
    )
    add_message(conversation, "user", "What causes tides?", section=section)
    add_message(conversation, "assistant", "Mostly the moon.", section=section)
    add_message(conversation, "user", "And waves?")
    state = embedded_state(chat(alice_client, conversation))
    (summary,) = state["sections"]
    assert summary["count"] == 2 and "<strong>tides</strong>" in summary["html"]
    assert [m["content"] for m in state["messages"]] == ["And waves?"]
    url = reverse("conversations:section", args=[conversation.pk, "s1"])
    originals = alice_client.get(url).json()["messages"]
    assert [m["content"] for m in originals] == ["What causes tides?", "Mostly the moon."]


def test_initial_state_is_embedded_as_json_and_no_transcript_is_rendered_here(
    alice_client, conversation, add_message
):
    add_message(conversation, "user", "</script><script>alert(1)</script>")
    page = chat(alice_client, conversation)
    assert '<ol class="transcript" id="transcript" aria-label="Messages"></ol>' in page
    state = embedded_state(page)
    assert state["conversation"]["id"] == str(conversation.pk)
    assert state["messages"][0]["content"] == "</script><script>alert(1)</script>"


def test_context_meter_is_hidden_without_a_window(alice, alice_client, make_profile):
    profile = make_profile("unbounded", is_default=True)
    conversation = Conversation.objects.create(owner=alice, profile=profile)
    page = chat(alice_client, conversation)
    assert re.search(r'data-testid="context-meter"[^>]*hidden>', page)


def test_a_sections_originals_are_refused_to_other_users_and_to_anonymous_visitors(
    alice_client, conversation, add_message, bob
):
    section = Section.objects.create(conversation=conversation, section_id="s1", position=0)
    add_message(conversation, "user", "secret", section=section)
    url = reverse("conversations:section", args=[conversation.pk, "s1"])
    assert alice_client.get(url).status_code == 200
    other = Client()
    assert other.get(url).status_code == 302  # to the login page
    other.force_login(bob)
    assert other.get(url).status_code == 404
    assert alice_client.get(url.replace("/s1/", "/nope/")).status_code == 404


def test_a_long_tail_embeds_its_newest_page_and_the_earlier_ones_page_back(
    alice_client, conversation, add_message
):
    for n in range(130):
        add_message(conversation, "user", f"question {n}", message_id=f"u{n}")
        add_message(conversation, "assistant", f"answer {n}", message_id=f"a{n}")
    state = embedded_state(chat(alice_client, conversation))
    assert state["earlier"] == 60 and state["messages"][0]["id"] == "u30"
    assert state["messages"][-1]["content"] == "answer 129"
    url = reverse("conversations:messages", args=[conversation.pk])
    older = alice_client.get(url, {"before": "u30"}).json()
    assert older["earlier"] == 0
    assert [m["id"] for m in older["messages"]][:2] == ["u0", "a0"]
    assert len(older["messages"]) == 60


def test_earlier_messages_need_an_anchor_and_the_owner(
    alice_client, conversation, add_message, bob
):
    add_message(conversation, "user", "hello", message_id="u0")
    url = reverse("conversations:messages", args=[conversation.pk])
    assert alice_client.get(url).status_code == 400
    assert alice_client.get(url, {"before": "nope"}).status_code == 404
    other = Client()
    assert other.get(url, {"before": "u0"}).status_code == 302
    other.force_login(bob)
    assert other.get(url, {"before": "u0"}).status_code == 404
