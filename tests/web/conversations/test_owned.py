"""A user's conversation with its profile comes back in one statement, and only to its owner."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import AgentProfile, ConfigRevision, ProviderEndpoint, bump_config_revision
from conversations.models import Conversation
from conversations.owned import owned_conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile() -> AgentProfile:
    endpoint = ProviderEndpoint.objects.create(name="local", kind="scripted")
    return AgentProfile.objects.create(slug="helper", name="Helper", model=f"{endpoint.name}/m")


def test_the_owner_gets_the_conversation_with_its_profile_in_one_statement(user, profile) -> None:
    stored = Conversation.objects.create(owner=user, title="Plans", profile=profile)
    bump_config_revision()

    with CaptureQueriesContext(connection) as queries:
        found = owned_conversation(str(stored.pk), user.pk)
        assert found is not None
        conversation, revision = found
        assert conversation.profile is not None and conversation.profile.slug == "helper"
    assert len(queries) == 1
    assert (conversation.pk, conversation.title, conversation.owner_id) == (
        stored.pk,
        "Plans",
        user.pk,
    )
    assert conversation.created == stored.created
    assert revision == ConfigRevision.objects.get().value


def test_a_conversation_without_a_profile_has_none(user) -> None:
    stored = Conversation.objects.create(owner=user, title="Bare")

    found = owned_conversation(stored.pk, user.pk)

    assert found is not None and found[0].profile is None


def test_another_users_or_an_unknown_or_malformed_id_finds_nothing(user, other_user) -> None:
    stored = Conversation.objects.create(owner=user, title="Mine")

    assert owned_conversation(str(stored.pk), other_user.pk) is None
    assert owned_conversation(str(uuid.uuid4()), user.pk) is None
    assert owned_conversation("not-a-uuid", user.pk) is None
