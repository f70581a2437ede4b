"""AnthropicProvider over real HTTP: Messages API SSE streams replayed by a loopback server.

The events follow the public streaming reference: ``message_start``, ``content_block_start``
/ ``content_block_delta`` / ``content_block_stop`` per block, ``ping``, ``message_delta``
with ``stop_reason`` and cumulative ``usage.output_tokens``, ``message_stop``.
"""

from __future__ import annotations

from typing import Any

import pytest

from orkestrel.core.errors import ProviderError
from orkestrel.core.messages import ToolCall
from orkestrel.core.provider import (
    ContentDelta,
    ProviderResult,
    ProviderStreamOptions,
    ThinkingDelta,
    ToolDefinition,
)
from orkestrel.core.usage import TokenUsage
from orkestrel.providers.anthropic import SCHEMA_TOOL, AnthropicProvider

from .conftest import collect
from .server import Reply, StubServer, sse

JPEG = "/9j/4AAQSkZJRgABAQAAAQABAAD"


def message_start(input_tokens: int = 25, cached: int = 0) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-5",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_read_input_tokens": cached,
                "output_tokens": 1,
            },
        },
    }


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_end(reason: str, output_tokens: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def provider(stub: StubServer, **options: Any) -> AnthropicProvider:
    options.setdefault("retries", 0)
    return AnthropicProvider(model="claude-sonnet-4-5", base_url=stub.url, **options)


def tool_use_stream() -> list[bytes]:
    """Thinking (signed), a sentence, then a tool_use whose JSON input is cut mid-token."""
    return sse(
        message_start(472, cached=8),
        start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="I need the weather"),
        delta(0, type="thinking_delta", thinking=" in SF."),
        delta(
            0, type="signature_delta", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk"
        ),
        stop(0),
        {"type": "ping"},
        start(1, {"type": "text", "text": ""}),
        delta(1, type="text_delta", text="Okay, let's check"),
        delta(1, type="text_delta", text=" the weather."),
        stop(1),
        start(2, {"type": "tool_use", "id": "toolu_01T1x", "name": "get_weather", "input": {}}),
        delta(2, type="input_json_delta", partial_json=""),
        delta(2, type="input_json_delta", partial_json='{"location": "San Fra'),
        delta(2, type="input_json_delta", partial_json='ncisco, CA", "unit": "fah'),
        delta(2, type="input_json_delta", partial_json='renheit"}'),
        stop(2),
        *message_end("tool_use", 89),
        named=True,
    )


async def test_text_stream_yields_deltas_and_usage_from_start_and_delta(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            sse(
                message_start(),
                start(0, {"type": "text", "text": ""}),
                {"type": "ping"},
                delta(0, type="text_delta", text="Hello"),
                delta(0, type="text_delta", text="!"),
                stop(0),
                *message_end("end_turn", 15),
                named=True,
            )
        )
    )
    deltas, result = await collect(provider(stub, api_key="sk-ant-test"))
    assert deltas == [ContentDelta("Hello"), ContentDelta("!")]
    assert result == ProviderResult("Hello!", None, None, TokenUsage(25, 15, 40), "end_turn")
    sent = stub.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }


async def test_thinking_text_and_a_split_tool_use_assemble_into_one_result(
    stub: StubServer,
) -> None:
    stub.enqueue(Reply(tool_use_stream()))
    deltas, result = await collect(provider(stub), options={"think": "high"})
    assert deltas == [
        ThinkingDelta("I need the weather"),
        ThinkingDelta(" in SF."),
        ContentDelta("Okay, let's check"),
        ContentDelta(" the weather."),
    ]
    assert result == ProviderResult(
        "Okay, let's check the weather.",
        "I need the weather in SF.",
        (
            ToolCall(
                "toolu_01T1x",
                "get_weather",
                {"location": "San Francisco, CA", "unit": "fahrenheit"},
            ),
        ),
        TokenUsage(480, 89, 569, cache_read=8),
        "tool_use",
    )
    body = stub.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10240}
    assert body["max_tokens"] == 4096 + 10240


async def test_signed_thinking_is_sent_back_with_the_tool_turn_it_produced(
    stub: StubServer,
) -> None:
    stub.enqueue(Reply(tool_use_stream()), Reply(tool_use_stream()))
    chosen = provider(stub)
    first = [{"role": "user", "content": "Weather in SF?"}]
    _, result = await collect(chosen, first, options={"think": True})
    assert result.tools is not None
    follow_up = [
        *first,
        {"role": "assistant", "content": result.content, "calls": [result.tools[0].to_dict()]},
        {"role": "tool", "content": "15 degrees", "tool_call_id": "toolu_01T1x"},
    ]
    await collect(chosen, follow_up, options={"think": True})
    body = stub.requests[1].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "I need the weather in SF.",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
            },
            {"type": "text", "text": "Okay, let's check the weather."},
            {
                "type": "tool_use",
                "id": "toolu_01T1x",
                "name": "get_weather",
                "input": {"location": "San Francisco, CA", "unit": "fahrenheit"},
            },
        ],
    }


async def test_thinking_is_left_off_when_an_open_tool_turn_has_no_known_signature(
    stub: StubServer,
) -> None:
    stub.enqueue(Reply(sse(message_start(), *message_end("end_turn", 1), named=True)))
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "calls": [{"id": "t1", "name": "w", "arguments": {}}]},
        {"role": "tool", "content": "sunny", "tool_call_id": "t1"},
    ]
    await collect(provider(stub), history, options={"think": "max"})
    body = stub.requests[0].json()
    assert "thinking" not in body
    assert body["max_tokens"] == 4096


async def test_messages_map_to_system_blocks_and_one_user_turn_of_tool_results(
    stub: StubServer,
) -> None:
    stub.enqueue(Reply(sse(message_start(), *message_end("end_turn", 1), named=True)))
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "system", "content": "Use metric units."},
        {
            "role": "user",
            "content": "Compare these",
            "images": [JPEG, "data:image/webp;base64,UklGRg"],
        },
        {
            "role": "assistant",
            "content": "Looking.",
            "calls": [
                {"id": "a", "name": "lookup", "arguments": {"n": 1}},
                {"id": "b", "name": "lookup", "arguments": {"n": 2}},
            ],
        },
        {"role": "tool", "content": "one"},
        {"role": "tool", "content": "two"},
        {"role": "user", "content": "Thanks"},
    ]
    tools = [ToolDefinition("lookup", "Find things", {"type": "object"}), ToolDefinition("bare")]
    await collect(provider(stub, max_tokens=512), messages, tools=tools)
    body = stub.requests[0].json()
    assert body["system"] == "You are terse.\n\nUse metric units."
    assert body["max_tokens"] == 512
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/jpeg", "data": JPEG},
                },
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg"},
                },
                {"type": "text", "text": "Compare these"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "a", "name": "lookup", "input": {"n": 1}},
                {"type": "tool_use", "id": "b", "name": "lookup", "input": {"n": 2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "one"},
                {"type": "tool_result", "tool_use_id": "b", "content": "two"},
            ],
        },
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"] == [
        {"name": "lookup", "description": "Find things", "input_schema": {"type": "object"}},
        {"name": "bare", "input_schema": {"type": "object"}},
    ]


async def test_a_schema_forces_the_json_tool_and_its_input_streams_as_content(
    stub: StubServer,
) -> None:
    stub.enqueue(
        Reply(
            sse(
                message_start(),
                start(0, {"type": "tool_use", "id": "toolu_9", "name": SCHEMA_TOOL, "input": {}}),
                delta(0, type="input_json_delta", partial_json='{"answer": 4'),
                delta(0, type="input_json_delta", partial_json="2}"),
                stop(0),
                *message_end("tool_use", 12),
                named=True,
            )
        )
    )
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    deltas, result = await collect(provider(stub), options=ProviderStreamOptions(schema=schema))
    assert deltas == [ContentDelta('{"answer": 4'), ContentDelta("2}")]
    assert (result.content, result.tools) == ('{"answer": 42}', None)
    body = stub.requests[0].json()
    assert body["tool_choice"] == {"type": "tool", "name": SCHEMA_TOOL}
    assert body["tools"][-1]["input_schema"] == schema


async def test_a_schema_with_thinking_lets_the_model_choose_the_tool(stub: StubServer) -> None:
    stub.enqueue(Reply(sse(message_start(), *message_end("end_turn", 1), named=True)))
    await collect(provider(stub), options={"think": "low", "schema": {"type": "object"}})
    body = stub.requests[0].json()
    assert body["tool_choice"] == {"type": "auto"}
    assert body["thinking"]["budget_tokens"] == 1024


async def test_an_overloaded_error_event_raises_a_retryable_provider_error(
    stub: StubServer,
) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stub.enqueue(Reply(sse(message_start(), error, named=True)))
    with pytest.raises(ProviderError, match="reported an error mid-stream") as caught:
        await collect(provider(stub))
    assert caught.value.retryable
    assert "overloaded_error" in (caught.value.body or "")


async def test_a_stream_cut_before_message_stop_is_a_broken_stream(stub: StubServer) -> None:
    frames = sse(message_start(), start(0, {"type": "text", "text": ""}), named=True)
    stub.enqueue(Reply(frames))
    with pytest.raises(ProviderError, match="ended before the turn completed"):
        await collect(provider(stub))


async def test_an_event_missing_required_fields_is_malformed(stub: StubServer) -> None:
    stub.enqueue(Reply(sse(message_start(), {"type": "content_block_delta"}, named=True)))
    with pytest.raises(ProviderError, match="malformed stream"):
        await collect(provider(stub))


@pytest.mark.parametrize("level", ["none", False])
async def test_thinking_off_sends_no_thinking_block(stub: StubServer, level: Any) -> None:
    stub.enqueue(Reply(sse(message_start(), *message_end("end_turn", 1), named=True)))
    await collect(provider(stub), options={"think": level})
    assert "thinking" not in stub.requests[0].json()


def test_thinking_budgets_can_be_overridden_but_not_below_the_api_minimum() -> None:
    with pytest.raises(ValueError, match="thinking_budgets"):
        AnthropicProvider(model="m", thinking_budgets={"low": 10})
    with pytest.raises(ValueError, match="thinking_budgets"):
        AnthropicProvider(model="m", thinking_budgets={"extreme": 2048})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicProvider(model="m", max_tokens=0)


async def test_cache_reads_and_writes_are_counted_and_included_in_the_input(
    stub: StubServer,
) -> None:
    # ``input_tokens`` leaves the cached input out: the prompt is all three together.
    start_event = message_start(21)
    start_event["message"]["usage"].update(
        cache_creation_input_tokens=188, cache_read_input_tokens=1024
    )
    stub.enqueue(
        Reply(
            sse(
                start_event,
                start(0, {"type": "text", "text": ""}),
                delta(0, type="text_delta", text="Hi"),
                stop(0),
                *message_end("end_turn", 393),
                named=True,
            )
        )
    )
    _, result = await collect(provider(stub))
    assert result.usage == TokenUsage(
        1233, 393, 1626, cache_read=1024, cache_write=188, reasoning=0
    )
