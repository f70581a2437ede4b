"""The chat page shows the conversation's active skills as chips, and embeds each answer's
thinking for the transcript (rendered by render.js as it is live)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from conversations.models import Conversation

from .test_chat_page import embedded_state

pytestmark = pytest.mark.django_db


def page_of(client, conversation) -> str:
    response = client.get(reverse("conversations:chat", args=[conversation.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_active_skills_are_chips_by_the_title_and_none_hides_the_list(
    alice, alice_client, default_profile, add_message
):
    quiet = Conversation.objects.create(owner=alice, profile=default_profile)
    assert re.search(
        r'<div class="chat-skills" id="skills" data-testid="skills" hidden>',
        page_of(alice_client, quiet),
    )
    skilled = Conversation.objects.create(
        owner=alice, profile=default_profile, skills=["reviewer", "<b>x</b>"]
    )
    add_message(skilled, "user", "hi")
    add_message(skilled, "assistant", "hello", thinking="Greet back.", thinking_ms=1200)
    page = page_of(alice_client, skilled)
    chips = re.findall(r'<li class="skill-chip" data-testid="skill">(.*?)</li>', page)
    assert chips == ["reviewer", "&lt;b&gt;x&lt;/b&gt;"]
    state = embedded_state(page)
    assert state["conversation"]["skills"] == ["reviewer", "<b>x</b>"]
    answer = state["messages"][-1]
    assert (answer["thinking"], answer["thinking_ms"]) == ("Greet back.", 1200)
