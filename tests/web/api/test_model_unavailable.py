"""A conversation's chosen model whose endpoint was deleted is refused at the next send
(``409 model_unavailable``), never replaced by the profile's model; nothing is stored."""

from __future__ import annotations

import pytest

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def orphaned(alice, stub) -> Conversation:
    """Alice's conversation that chose ``gone/big``, whose endpoint was deleted since."""
    ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=f"{stub.url}/v1")
    profile = AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/small")
    ProviderEndpoint.objects.create(name="gone", kind="openai", base_url=f"{stub.url}/v1")
    conversation = Conversation.objects.create(
        owner=alice, title="Trip", profile=profile, model="gone/big"
    )
    ProviderEndpoint.objects.filter(name="gone").delete()
    return conversation


def test_a_send_to_a_model_whose_endpoint_is_gone_is_refused_and_stores_nothing(
    api, orphaned, stub
):
    response = api.post(
        f"/api/conversations/{orphaned.pk}/messages/", {"content": "hello"}, format="json"
    )
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "model_unavailable"
    assert "gone/big" in body["detail"]
    # Neither the message nor a run is stored, and no other model was called in its place.
    assert not Message.objects.filter(conversation=orphaned).exists()
    assert not Run.objects.filter(conversation=orphaned).exists()
    assert stub.requests == []
