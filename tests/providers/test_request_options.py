"""The request options a caller steers the model with (``tool_choice``, ``parallel_tool_calls``,
``response_format``) in each wire protocol, over real HTTP: sent as asked where the protocol
has them, refused (never dropped) where it has not."""

from __future__ import annotations

import pytest

from orkestrel.core import (
    NamedToolChoice,
    ProviderStreamOptions,
    ResponseFormat,
    ToolDefinition,
    create_agent,
    create_tool,
    create_tool_manager,
)
from orkestrel.providers.anthropic import SCHEMA_TOOL
from orkestrel.providers.steering import UnsupportedOption
from orkestrel.providers.wire import to_options

from .conftest import collect
from .server import StubServer
from .test_http import PROTOCOLS, build
from .turns import reply

OPENAI, ANTHROPIC, OLLAMA = PROTOCOLS
LOOKUP = ToolDefinition("lookup", "Find a thing.", {"type": "object"})
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
STRICT = ResponseFormat(
    type="json_schema", schema=SCHEMA, name="count", description="How many.", strict=True
)


async def sent(stub: StubServer, protocol, **options) -> dict:
    """The body ``protocol``'s provider sends for one call with ``options``."""
    tools = options.pop("tools", [LOOKUP])
    stub.enqueue(reply(protocol.name, ["ok"]))
    await collect(build(protocol, stub), tools=tools, options=ProviderStreamOptions(**options))
    return stub.requests[-1].json()


# -- OpenAI-compatible: everything as it is ---------------------------------------------------


async def test_openai_sends_a_choice_and_parallel_calls_as_they_are_with_tools_only(stub) -> None:
    body = await sent(
        stub, OPENAI, tool_choice=NamedToolChoice("lookup"), parallel_tool_calls=False
    )
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert body["parallel_tool_calls"] is False
    # The API refuses both without tools (a summary's call has none).
    body = await sent(stub, OPENAI, tools=[], tool_choice="required", parallel_tool_calls=True)
    assert "tool_choice" not in body and "parallel_tool_calls" not in body


async def test_openai_sends_a_schema_with_its_name_description_and_strict(stub) -> None:
    body = await sent(stub, OPENAI, response_format=STRICT, schema=SCHEMA)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "count",
            "description": "How many.",
            "schema": SCHEMA,
            "strict": True,
        },
    }


async def test_openai_sends_json_object_as_such(stub) -> None:
    body = await sent(
        stub, OPENAI, response_format=ResponseFormat(type="json_object"), schema={"type": "object"}
    )
    assert body["response_format"] == {"type": "json_object"}


# -- Anthropic: its own spelling --------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        (NamedToolChoice("lookup"), {"type": "tool", "name": "lookup"}),
    ],
)
async def test_anthropic_spells_each_choice_its_way(stub, choice, wire) -> None:
    assert (await sent(stub, ANTHROPIC, tool_choice=choice))["tool_choice"] == wire


async def test_anthropic_keeps_to_one_call_per_turn_with_a_flag_of_the_choice(stub) -> None:
    body = await sent(stub, ANTHROPIC, parallel_tool_calls=False)
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


async def test_anthropic_drops_thinking_for_a_forced_call_which_it_refuses_with_one(stub) -> None:
    body = await sent(stub, ANTHROPIC, think="high", tool_choice=NamedToolChoice("lookup"))
    assert body["tool_choice"] == {"type": "tool", "name": "lookup"} and "thinking" not in body
    assert "thinking" in await sent(stub, ANTHROPIC, think="high", tool_choice="auto")


async def test_anthropic_answers_json_object_through_its_schema_tool(stub) -> None:
    body = await sent(stub, ANTHROPIC, tools=[], response_format=ResponseFormat(type="json_object"))
    assert body["tools"][-1]["name"] == SCHEMA_TOOL
    assert body["tools"][-1]["input_schema"] == {"type": "object"}
    assert body["tool_choice"] == {"type": "tool", "name": SCHEMA_TOOL}


async def test_anthropic_refuses_a_strict_schema_before_it_sends_anything(stub) -> None:
    with pytest.raises(UnsupportedOption) as caught:
        await collect(build(ANTHROPIC, stub), options=ProviderStreamOptions(response_format=STRICT))
    assert caught.value.unsupported.option == "response_format.strict"
    assert stub.requests == []


# -- Ollama: what /api/chat has ---------------------------------------------------------------


async def test_ollama_honours_none_by_offering_no_tools(stub) -> None:
    assert "tools" not in await sent(stub, OLLAMA, tool_choice="none")
    assert "tools" in await sent(stub, OLLAMA, tool_choice="auto")


async def test_ollama_takes_json_object_as_json_and_a_schema_as_its_format(stub) -> None:
    body = await sent(stub, OLLAMA, response_format=ResponseFormat(type="json_object"))
    assert body["format"] == "json"
    assert (await sent(stub, OLLAMA, response_format=STRICT))["format"] == SCHEMA


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": NamedToolChoice("lookup")}, "tool_choice"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
    ],
)
async def test_ollama_refuses_what_it_cannot_do_before_it_sends_anything(
    stub, options, option
) -> None:
    with pytest.raises(UnsupportedOption) as caught:
        await collect(build(OLLAMA, stub), tools=[LOOKUP], options=ProviderStreamOptions(**options))
    assert caught.value.unsupported.option == option
    assert stub.requests == []


# -- the kit ----------------------------------------------------------------------------------


def test_options_from_a_mapping_keep_the_steering_and_refuse_an_unknown_choice() -> None:
    options = to_options(
        {"tool_choice": "required", "parallel_tool_calls": False, "response_format": STRICT}
    )
    assert (options.tool_choice, options.parallel_tool_calls, options.response_format) == (
        "required",
        False,
        STRICT,
    )
    with pytest.raises(ValueError, match="tool_choice"):
        to_options({"tool_choice": "sometimes"})


async def test_an_agent_run_sends_its_steering_with_every_model_call(stub) -> None:
    stub.enqueue(
        reply("openai", calls=[("c1", "lookup", {})]),
        reply("openai", ['{"n": 1}']),
    )
    tools = create_tool_manager()
    tools.add(create_tool(name="lookup", parameters={"type": "object"}, execute=lambda _: 1))
    agent = create_agent(build(OPENAI, stub), tools=tools)
    agent.context.messages.add({"role": "user", "content": "count"})
    result = await agent.generate(
        tool_choice="required", parallel_tool_calls=False, response_format=STRICT
    )
    assert result.content == '{"n": 1}'
    bodies = [request.json() for request in stub.requests]
    assert [body["tool_choice"] for body in bodies] == ["required", "required"]
    assert [body["parallel_tool_calls"] for body in bodies] == [False, False]
    assert all(body["response_format"]["json_schema"]["name"] == "count" for body in bodies)
