"""On ``/v1`` a disabled endpoint's models are gone: a profile on one leaves ``/v1/models``, and
running it, or continuing a conversation that chose a model of it, is ``409``
``model_unavailable`` (the SDK's ``ConflictError``); nothing reaches the model server."""

from __future__ import annotations

import openai
import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


def disable(name: str) -> None:
    ProviderEndpoint.objects.filter(name=name).update(enabled=False)


async def test_a_profile_on_a_disabled_endpoint_leaves_the_models_and_cannot_run(
    sdk, demo, upstream, stub
):
    client = sdk()
    assert {model.id for model in (await client.models.list()).data} == {"demo", "upstream"}
    await sync_to_async(disable)("stub")
    assert [model.id for model in (await client.models.list()).data] == ["demo"]
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("upstream")
    with pytest.raises(openai.ConflictError) as caught:
        await client.chat.completions.create(
            model="upstream", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body["code"] == "model_unavailable"
    assert stub.requests == []


async def test_continuing_a_conversation_whose_chosen_model_is_disabled_is_a_conflict(
    sdk, upstream, stub
):
    stub.enqueue(reply("openai", ["first"]))
    first = await sdk().responses.create(model="upstream", input="hello")

    def choose_a_model_then_disable_its_endpoint() -> None:
        ProviderEndpoint.objects.create(name="off", kind="openai", base_url=f"{stub.url}/v1")
        Conversation.objects.update(model="off/big")
        disable("off")

    await sync_to_async(choose_a_model_then_disable_its_endpoint)()
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().responses.create(model="upstream", input="more", previous_response_id=first.id)
    body = caught.value.body
    assert (body["code"], body["param"]) == ("model_unavailable", "previous_response_id")
    assert "off/big" in body["message"]
    assert len(stub.requests) == 1
    assert await sync_to_async(AgentProfile.objects.filter(slug="upstream").exists)()
