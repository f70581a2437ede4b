"""The conversation admin shows what the chat shows: each answer's thinking with its duration,
and the skills active in the conversation."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from conversations.models import Conversation
from conversations.stores import DjangoConversationStore
from conversations.writer import Thought, write_thinking

pytestmark = pytest.mark.django_db


def test_the_change_page_shows_thinking_with_its_duration_and_the_active_skills():
    operator = get_user_model().objects.create_superuser("root", email="root@example.com")
    conversation = Conversation.objects.create(owner=operator, skills=["reviewer", "translator"])
    DjangoConversationStore().set_sync(
        {
            "id": str(conversation.pk),
            "sections": [],
            "messages": [
                {"id": "m1", "role": "user", "content": "hello"},
                {"id": "m2", "role": "assistant", "content": "hi"},
            ],
        }
    )
    write_thinking(conversation.pk, {"m2": Thought("Greet <them> back.", 2450)})
    client = Client()
    client.force_login(operator)
    page = client.get(reverse("admin:conversations_conversation_change", args=[conversation.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "reviewer, translator" in html
    assert "thought for 2.5 s" in html and "Greet &lt;them&gt; back." in html
