"""Scoped API keys on ``/v1``: listing models needs ``read``, running one ``run``; a profile
outside the key's ``profiles`` is no model at all (absent, and 404 ``model_not_found``)."""

from __future__ import annotations

import openai
import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ApiKey
from conversations.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def scoped_key(alice):
    """``await scoped_key("read", profiles=None)``: a key of alice's with those scopes."""

    async def issue(*scopes: str, profiles: list[str] | None = None) -> str:
        make = sync_to_async(ApiKey.objects.issue)
        return (await make(user=alice, name="scoped", scopes=scopes, profiles=profiles))[1]

    return issue


@pytest.fixture
def other(demo) -> AgentProfile:
    return AgentProfile.objects.create(slug="other", name="Other", model=demo.model)


async def test_a_run_only_key_cannot_list_models(sdk, scoped_key, demo):
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await sdk(await scoped_key("run")).models.list()
    assert caught.value.body["code"] == "scope"


async def test_a_read_key_lists_models_but_cannot_run_one(sdk, scoped_key, demo):
    client = sdk(await scoped_key("read"))
    assert [model.id for model in (await client.models.list()).data] == ["demo"]
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await client.chat.completions.create(model="demo", messages=HELLO)
    assert caught.value.body["code"] == "scope"
    with pytest.raises(openai.PermissionDeniedError):
        await client.responses.create(model="demo", input="hello")
    assert not await sync_to_async(Conversation.objects.exists)()


async def test_a_run_key_runs_a_model(sdk, scoped_key, demo):
    completion = await sdk(await scoped_key("run")).chat.completions.create(
        model="demo", messages=HELLO
    )
    assert completion.choices[0].message.content


async def test_a_profile_outside_the_keys_profiles_is_no_model(sdk, scoped_key, demo, other):
    client = sdk(await scoped_key("read", "run", profiles=["other"]))
    assert [model.id for model in (await client.models.list()).data] == ["other"]
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("demo")
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="demo", messages=HELLO)
    assert caught.value.body["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        await client.responses.create(model="demo", input="hello")
    assert not await sync_to_async(Conversation.objects.exists)()
    assert (await client.models.retrieve("other")).id == "other"
