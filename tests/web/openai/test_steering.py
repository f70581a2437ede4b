"""What clients send to steer the model reaches the model server as they sent it: every form of
``tool_choice``, ``parallel_tool_calls``, a JSON Schema with its ``name`` and ``strict``,
``json_object`` as such (the official SDK and LangChain, against the stub model server)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import openai
import pytest
from asgiref.sync import sync_to_async
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from conversations.models import Run
from orkestrel.asgi import application
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


def function(name: str, nested: bool = True) -> dict:
    spec = {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    return {"type": "function", "function": spec} if nested else {"type": "function", **spec}


WEATHER, TIME = function("get_weather"), function("get_time")
ASK = [{"role": "user", "content": "Weather in Paris?"}]
STRICT = {
    "type": "json_schema",
    "json_schema": {
        "name": "weather_report",
        "description": "A city's weather.",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "degrees": {"type": "integer"}},
            "required": ["city", "degrees"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


async def test_a_forced_function_and_no_parallel_calls_reach_the_model(sdk, upstream, stub):
    stub.enqueue(reply("openai", calls=[("call_1", "get_weather", {"city": "Paris"})]))
    completion = await sdk().chat.completions.create(
        model="upstream",
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        parallel_tool_calls=False,
    )
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    sent = stub.requests[0].json()
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["parallel_tool_calls"] is False
    record = await sync_to_async(lambda: Run.objects.get().request)()
    assert record["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


async def test_auto_and_required_reach_the_model_and_none_offers_no_client_tool(
    sdk, upstream, stub
):
    for choice in ("auto", "required", "none"):
        stub.enqueue(reply("openai", ["ok"]))
        await sdk().chat.completions.create(
            model="upstream", messages=ASK, tools=[WEATHER], tool_choice=choice
        )
    auto, required, none = (request.json() for request in stub.requests)
    assert (auto["tool_choice"], required["tool_choice"]) == ("auto", "required")
    assert "tools" not in none and "tool_choice" not in none


async def test_allowed_tools_offers_only_the_listed_tools_in_its_mode(sdk, upstream, stub):
    stub.enqueue(reply("openai", ["ok"]))
    await sdk().chat.completions.create(
        model="upstream",
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice={
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": "get_time"}}],
            },
        },
    )
    sent = stub.requests[0].json()
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["get_time"]
    assert sent["tool_choice"] == "required"


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ({"type": "function", "function": {"name": "nope"}}, "tool_choice.function.name"),
        ({"type": "custom", "custom": {"name": "grammar"}}, "tool_choice.type"),
        ("sometimes", "tool_choice"),
    ],
)
async def test_a_choice_that_cannot_be_followed_is_a_400_naming_it(
    sdk, upstream, stub, choice, param
):
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(
            model="upstream", messages=ASK, tools=[WEATHER], tool_choice=choice
        )
    assert caught.value.body["param"] == param
    assert stub.requests == [] and await sync_to_async(Run.objects.count)() == 0


async def test_required_without_tools_is_a_400(sdk, upstream, stub):
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(model="upstream", messages=ASK, tool_choice="required")
    assert caught.value.body["param"] == "tool_choice"


async def test_a_strict_schema_reaches_the_model_unchanged(sdk, upstream, stub):
    stub.enqueue(reply("openai", ['{"city": "Paris", "degrees": 21}']))
    completion = await sdk().chat.completions.create(
        model="upstream", messages=ASK, response_format=STRICT
    )
    assert json.loads(completion.choices[0].message.content) == {"city": "Paris", "degrees": 21}
    assert stub.requests[0].json()["response_format"] == STRICT


async def test_json_object_stays_json_object(sdk, upstream, stub):
    stub.enqueue(reply("openai", ['{"a": 1}']), reply("openai", ['{"b": 2}']))
    await sdk().chat.completions.create(
        model="upstream", messages=ASK, response_format={"type": "json_object"}
    )
    await sdk().responses.create(
        model="upstream", input="json please", text={"format": {"type": "json_object"}}
    )
    assert [request.json()["response_format"] for request in stub.requests] == [
        {"type": "json_object"},
        {"type": "json_object"},
    ]


async def test_the_responses_api_forwards_its_forms_and_echoes_them(sdk, upstream, stub):
    stub.enqueue(reply("openai", calls=[("call_1", "get_weather", {"city": "Oslo"})]))
    schema = STRICT["json_schema"]
    made = await sdk().responses.create(
        model="upstream",
        input="Weather in Oslo?",
        tools=[function("get_weather", nested=False), function("get_time", nested=False)],
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
        text={"format": {"type": "json_schema", **schema}},
    )
    sent = stub.requests[0].json()
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["parallel_tool_calls"] is False
    assert sent["response_format"] == STRICT
    assert made.tool_choice.type == "function" and made.tool_choice.name == "get_weather"
    assert made.parallel_tool_calls is False
    assert made.text.format.name == "weather_report" and made.text.format.strict is True


async def test_responses_allowed_tools_offers_only_the_listed_tools(sdk, upstream, stub):
    stub.enqueue(reply("openai", ["ok"]))
    await sdk().responses.create(
        model="upstream",
        input="time?",
        tools=[function("get_weather", nested=False), function("get_time", nested=False)],
        tool_choice={
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": "get_weather"}],
        },
    )
    sent = stub.requests[0].json()
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["get_weather"]
    assert sent["tool_choice"] == "auto"


class Weather(BaseModel):
    """A city's weather."""

    city: str
    degrees: int


@pytest.fixture
async def langchain(alice_key) -> AsyncIterator[ChatOpenAI]:
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://testserver"
    )
    yield ChatOpenAI(
        model="upstream",
        api_key=alice_key,
        base_url="http://testserver/v1",
        http_async_client=http,
        max_retries=0,
    )
    await http.aclose()


async def test_langchain_structured_output_by_function_calling_returns_the_object(
    langchain, upstream, stub
):
    stub.enqueue(reply("openai", calls=[("call_1", "Weather", {"city": "Paris", "degrees": 21})]))
    structured = langchain.with_structured_output(Weather, method="function_calling")
    answer = await structured.ainvoke("What is the weather in Paris?")
    assert answer == Weather(city="Paris", degrees=21)
    sent = stub.requests[0].json()
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "Weather"}}
    assert sent["parallel_tool_calls"] is False


async def test_langchain_strict_json_schema_reaches_the_model_unchanged(langchain, upstream, stub):
    stub.enqueue(reply("openai", ['{"city": "Paris", "degrees": 21}']))
    structured = langchain.with_structured_output(Weather, method="json_schema", strict=True)
    answer = await structured.ainvoke("What is the weather in Paris?")
    assert answer == Weather(city="Paris", degrees=21)
    sent = stub.requests[0].json()["response_format"]
    assert sent["type"] == "json_schema"
    assert (sent["json_schema"]["name"], sent["json_schema"]["strict"]) == ("Weather", True)
