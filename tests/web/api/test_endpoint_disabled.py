"""A disabled endpoint's models are no choice and no answer: they leave the model picker, a
conversation that chose one (or whose profile runs on one) is refused at the next send with
``409 model_unavailable`` and nothing stored, never answered by another model; enabled again,
the choice is offered again."""

from __future__ import annotations

import pytest

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message, Run
from conversations.services import model_choices

pytestmark = pytest.mark.django_db


@pytest.fixture
def endpoints(stub) -> tuple[ProviderEndpoint, ProviderEndpoint]:
    """``stub`` (enabled, the profile's) and ``off`` (listing ``big``, disabled)."""
    on = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", models=["small"]
    )
    off = ProviderEndpoint.objects.create(
        name="off", kind="openai", base_url=f"{stub.url}/v1", models=["big"], enabled=False
    )
    return on, off


@pytest.fixture
def profile(endpoints) -> AgentProfile:
    return AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/small")


def assert_unavailable(response, model: str) -> None:
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "model_unavailable" and model in body["detail"]


def test_a_disabled_endpoints_models_leave_the_picker_and_cannot_be_chosen(
    alice, api, profile, endpoints
):
    assert model_choices(alice.pk) == ["stub/small"]
    conversation = Conversation.objects.create(owner=alice, profile=profile)
    refused = api.patch(
        f"/api/conversations/{conversation.pk}/", {"model": "off/big"}, format="json"
    )
    assert refused.status_code == 400 and "model" in refused.json()["errors"]
    _, off = endpoints
    off.enabled = True
    off.save()
    assert model_choices(alice.pk) == ["stub/small"]  # ``off`` serves no profile of alice's
    AgentProfile.objects.create(slug="big", name="Big", model="off/big")
    assert set(model_choices(alice.pk)) == {"stub/small", "off/big"}


def test_a_send_to_a_chosen_model_on_a_disabled_endpoint_is_refused_and_stores_nothing(
    alice, api, profile, stub
):
    chosen = Conversation.objects.create(owner=alice, profile=profile, model="off/big")
    sent = api.post(f"/api/conversations/{chosen.pk}/messages/", {"content": "hi"}, format="json")
    assert_unavailable(sent, "off/big")
    assert "this conversation chose" in sent.json()["detail"]
    assert not Message.objects.filter(conversation=chosen).exists()
    assert not Run.objects.filter(conversation=chosen).exists()
    assert stub.requests == []


def test_a_profile_whose_endpoint_is_disabled_is_refused_alike(alice, api, endpoints, stub):
    on, _ = endpoints
    profile = AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/small")
    conversation = Conversation.objects.create(owner=alice, profile=profile)
    on.enabled = False
    on.save()
    sent = api.post(
        f"/api/conversations/{conversation.pk}/messages/", {"content": "hi"}, format="json"
    )
    assert_unavailable(sent, "stub/small")
    assert not Message.objects.filter(conversation=conversation).exists()
    assert stub.requests == []
