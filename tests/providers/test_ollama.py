"""OllamaProvider over real HTTP: ``/api/chat`` NDJSON streams replayed by a loopback server.

Lines follow the Ollama API reference: ``message.content`` / ``message.thinking`` per line,
``message.tool_calls`` with ``function.arguments`` as an object, and a final ``done: true``
line carrying ``done_reason``, ``prompt_eval_count`` and ``eval_count``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from orkestrel.core.errors import ProviderError
from orkestrel.core.messages import ToolCall
from orkestrel.core.provider import ContentDelta, ProviderResult, ThinkingDelta, ToolDefinition
from orkestrel.core.usage import TokenUsage
from orkestrel.providers.ollama import OllamaProvider

from .conftest import collect
from .server import Reply, StubServer, ndjson

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"


def line(
    content: str = "", thinking: str | None = None, calls: list[Any] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if calls is not None:
        message["tool_calls"] = calls
    return {
        "model": "qwen3",
        "created_at": "2025-05-27T22:54:57.641643Z",
        "message": message,
        "done": False,
    }


def done(reason: str = "stop", prompt: int = 26, completion: int = 290) -> dict[str, Any]:
    return {
        "model": "qwen3",
        "created_at": "2025-05-27T22:54:58.100509Z",
        "message": {"role": "assistant", "content": ""},
        "done_reason": reason,
        "done": True,
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": 342546000,
        "eval_count": completion,
        "eval_duration": 4535599000,
    }


def provider(stub: StubServer, **options: Any) -> OllamaProvider:
    options.setdefault("retries", 0)
    return OllamaProvider(model="qwen3", base_url=stub.url, **options)


async def test_thinking_then_content_lines_and_the_done_line_counts(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            ndjson(
                line(thinking="Okay, the user"),
                line(thinking=" says hi."),
                line("Hello"),
                line(" there"),
                done(),
            ),
            content_type="application/x-ndjson",
        )
    )
    deltas, result = await collect(provider(stub), options={"think": True})
    assert deltas == [
        ThinkingDelta("Okay, the user"),
        ThinkingDelta(" says hi."),
        ContentDelta("Hello"),
        ContentDelta(" there"),
    ]
    assert result == ProviderResult(
        "Hello there", "Okay, the user says hi.", None, TokenUsage(26, 290, 316), "stop"
    )
    sent = stub.requests[0]
    assert sent.path == "/api/chat"
    assert sent.json() == {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "think": True,
    }


async def test_tool_calls_with_object_arguments_keep_or_mint_ids(stub: StubServer) -> None:
    calls = [
        {"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}},
        {"id": "call_7", "function": {"index": 1, "name": "get_time", "arguments": {}}},
    ]
    stub.enqueue(Reply(ndjson(line(calls=calls), done(reason="stop"))))
    deltas, result = await collect(provider(stub))
    assert deltas == []
    assert result.tools is not None
    weather, clock = result.tools
    assert (weather.name, weather.arguments) == ("get_weather", {"city": "Toronto"})
    uuid.UUID(weather.id)
    assert clock == ToolCall("call_7", "get_time", {})


async def test_think_tags_in_content_are_split_when_the_server_does_not(stub: StubServer) -> None:
    stub.enqueue(Reply(ndjson(line("<think>hmm"), line("</think>"), line("Yes"), done())))
    deltas, result = await collect(provider(stub))
    assert deltas == [ThinkingDelta("hmm"), ContentDelta("Yes")]
    assert (result.content, result.thinking) == ("Yes", "hmm")


async def test_an_error_line_raises_with_the_server_message_kept_apart(stub: StubServer) -> None:
    stub.enqueue(Reply(ndjson(line("par"), {"error": "model runner has unexpectedly stopped"})))
    with pytest.raises(ProviderError, match="reported an error mid-stream") as caught:
        await collect(provider(stub))
    assert "model runner has unexpectedly stopped" in (caught.value.body or "")


async def test_a_last_line_without_newline_still_counts(stub: StubServer) -> None:
    frames = ndjson(line("ok"), done())
    stub.enqueue(Reply([frames[0], frames[1].rstrip(b"\n")]))
    _, result = await collect(provider(stub))
    assert (result.content, result.stop_reason) == ("ok", "stop")


async def test_a_body_that_ends_before_done_is_a_broken_stream(stub: StubServer) -> None:
    stub.enqueue(Reply(ndjson(line("cut"))))
    with pytest.raises(ProviderError, match="ended before the turn completed"):
        await collect(provider(stub))


async def test_messages_tools_images_schema_map_onto_the_request(stub: StubServer) -> None:
    stub.enqueue(Reply(ndjson(done())))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Look", "images": [f"data:image/png;base64,{PNG}"]},
        {
            "role": "assistant",
            "content": "",
            "calls": [{"id": "x", "name": "see", "arguments": {"a": 1}}],
        },
        {"role": "tool", "content": "seen"},
    ]
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    tools = [ToolDefinition("see", "Look at it", {"type": "object"})]
    await collect(provider(stub), messages, tools=tools, options={"schema": schema, "think": "max"})
    body = stub.requests[0].json()
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Look", "images": [PNG]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "see", "arguments": {"a": 1}}}],
        },
        {"role": "tool", "content": "seen", "tool_name": "see"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "see",
                "description": "Look at it",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert body["format"] == schema
    assert body["think"] == "high"


@pytest.mark.parametrize(
    ("think", "wire"),
    [(False, False), ("none", False), ("low", "low"), ("medium", "medium"), ("xhigh", "high")],
)
async def test_each_thinking_setting_maps_to_think(stub: StubServer, think: Any, wire: Any) -> None:
    stub.enqueue(Reply(ndjson(done())))
    await collect(provider(stub), options={"think": think})
    assert stub.requests[0].json()["think"] == wire


async def test_unset_think_sends_no_think_field(stub: StubServer) -> None:
    stub.enqueue(Reply(ndjson(done())))
    await collect(provider(stub))
    assert "think" not in stub.requests[0].json()
