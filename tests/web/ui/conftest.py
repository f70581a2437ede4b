"""Fixtures for the chat UI tests: two users, agent profiles and a conversation with history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message, Section


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="alice-pass-123")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="bob-pass-123")


@pytest.fixture
def alice_client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def endpoint(db) -> ProviderEndpoint:
    return ProviderEndpoint.objects.create(name="demo", kind="scripted")


@pytest.fixture
def make_profile(endpoint) -> Callable[..., AgentProfile]:
    def make(slug: str, **fields: Any) -> AgentProfile:
        fields.setdefault("name", slug.title())
        fields.setdefault("model", "demo/echo")
        return AgentProfile.objects.create(slug=slug, **fields)

    return make


@pytest.fixture
def default_profile(make_profile) -> AgentProfile:
    return make_profile("helper", name="Helper", is_default=True, context_window=8000)


@pytest.fixture
def add_message() -> Callable[..., Message]:
    """Append a message row (positions follow insertion order per conversation)."""

    def add(
        conversation: Conversation,
        role: str,
        content: str,
        *,
        section: Section | None = None,
        **fields: Any,
    ) -> Message:
        position = Message.objects.filter(conversation=conversation).count()
        fields.setdefault("message_id", f"m{position}-{conversation.pk}")
        return Message.objects.create(
            conversation=conversation,
            section=section,
            position=position,
            role=role,
            content=content,
            **fields,
        )

    return add
