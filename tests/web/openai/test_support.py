"""An option the profile's model server cannot honour is a ``400`` naming the parameter, before
anything is stored; one it can is sent in its own wire protocol (Anthropic, Ollama)."""

from __future__ import annotations

import openai
import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

ASK = [{"role": "user", "content": "Weather in Paris?"}]
WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}
FORCED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture
def on(stub):
    """``on(kind)``: a profile (slug ``kind``) whose model is the stub speaking ``kind``."""

    def make(kind: str) -> AgentProfile:
        base = stub.url if kind != "openai" else f"{stub.url}/v1"
        endpoint = ProviderEndpoint.objects.create(
            name=f"{kind}-stub", kind=kind, base_url=base, max_retries=0
        )
        return AgentProfile.objects.create(slug=kind, name=kind, model=f"{endpoint.name}/m")

    return make


async def nothing_stored() -> bool:
    return not await sync_to_async(Conversation.objects.exists)()


async def test_anthropic_gets_the_forced_tool_and_one_call_per_turn(sdk, on, stub):
    await sync_to_async(on)("anthropic")
    stub.enqueue(reply("anthropic", calls=[("toolu_1", "get_weather", {"city": "Paris"})]))
    completion = await sdk().chat.completions.create(
        model="anthropic",
        messages=ASK,
        tools=[WEATHER],
        tool_choice=FORCED,
        parallel_tool_calls=False,
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    assert stub.requests[0].json()["tool_choice"] == {
        "type": "tool",
        "name": "get_weather",
        "disable_parallel_tool_use": True,
    }


async def test_a_strict_schema_on_anthropic_is_a_400_naming_strict(sdk, on, stub):
    await sync_to_async(on)("anthropic")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(
            model="anthropic",
            messages=ASK,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "n", "schema": schema, "strict": True},
            },
        )
    assert caught.value.code == "unsupported_parameter"
    assert caught.value.body["param"] == "response_format.json_schema.strict"
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().responses.create(
            model="anthropic",
            input="n?",
            text={"format": {"type": "json_schema", "name": "n", "schema": schema, "strict": True}},
        )
    assert caught.value.body["param"] == "text.format.strict"
    assert stub.requests == [] and await nothing_stored()


@pytest.mark.parametrize(
    ("asked", "param"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": FORCED}, "tool_choice"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
    ],
)
async def test_what_ollama_cannot_do_is_a_400_naming_it(sdk, on, stub, asked, param):
    await sync_to_async(on)("ollama")
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(model="ollama", messages=ASK, tools=[WEATHER], **asked)
    assert caught.value.body["param"] == param and param in caught.value.message
    assert stub.requests == [] and await nothing_stored()


async def test_ollama_takes_json_object_as_its_json_mode(sdk, on, stub):
    await sync_to_async(on)("ollama")
    stub.enqueue(reply("ollama", ['{"a": 1}']))
    await sdk().chat.completions.create(
        model="ollama", messages=ASK, response_format={"type": "json_object"}
    )
    assert stub.requests[0].json()["format"] == "json"


async def test_the_offline_demo_refuses_a_format_and_a_forced_call(sdk, demo):
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(
            model="demo", messages=ASK, response_format={"type": "json_object"}
        )
    assert caught.value.body["param"] == "response_format"
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().responses.create(
            model="demo",
            input="hi",
            tools=[{"type": "function", "name": "get_weather"}],
            tool_choice="required",
        )
    assert caught.value.body["param"] == "tool_choice"
    assert await nothing_stored()
