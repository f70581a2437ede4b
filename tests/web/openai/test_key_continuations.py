"""A ``/v1/responses`` continuation runs on its stored conversation's profile: a key limited to
other ``profiles`` cannot continue it (``404`` ``model_not_found``, as any profile outside the
key), whatever ``model`` it names, and nothing is stored."""

from __future__ import annotations

import openai
import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ApiKey
from conversations.models import Conversation, Message

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def other(demo) -> AgentProfile:
    return AgentProfile.objects.create(slug="other", name="Other", model=demo.model)


@pytest.fixture
async def limited_key(alice, other) -> str:
    issue = sync_to_async(ApiKey.objects.issue)
    return (await issue(user=alice, name="other only", scopes=["read", "run"], profiles=["other"]))[
        1
    ]


async def counts() -> tuple[int, int]:
    conversations = await sync_to_async(Conversation.objects.count)()
    messages = await sync_to_async(Message.objects.count)()
    return conversations, messages


async def test_continuing_a_response_of_another_profile_is_model_not_found(
    sdk, demo, other, limited_key
):
    first = await sdk().responses.create(model="demo", input="hello")
    before = await counts()
    limited = sdk(limited_key)
    with pytest.raises(openai.NotFoundError) as caught:
        await limited.responses.create(model="other", input="more", previous_response_id=first.id)
    assert caught.value.body["code"] == "model_not_found" and "'demo'" in str(caught.value)
    with pytest.raises(openai.NotFoundError):
        await limited.responses.create(
            model="other", input="more", previous_response_id=first.id, stream=True
        )
    # Without a model the request is incomplete, whoever asks: refused before any lookup.
    with pytest.raises(openai.BadRequestError) as missing:
        await limited.with_options().post(
            "/responses",
            body={"input": "more", "previous_response_id": first.id},
            cast_to=object,
        )
    assert missing.value.body["param"] == "model"
    assert await counts() == before


async def test_the_keys_own_profile_continues_as_before(sdk, other, limited_key):
    limited = sdk(limited_key)
    first = await limited.responses.create(model="other", input="hello")
    second = await limited.responses.create(
        model="other", input="more", previous_response_id=first.id
    )
    assert second.status == "completed" and second.output_text
