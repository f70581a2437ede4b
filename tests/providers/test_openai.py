"""OpenAIProvider over real HTTP: Chat Completions SSE streams replayed by a loopback server.

The chunks follow the shapes of the public API reference ("The chat completion chunk
object"): a role chunk, content / tool_calls deltas, a finish_reason chunk, the usage-only
chunk that ``stream_options.include_usage`` adds, then ``data: [DONE]``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from orkestrel.core.abort import AbortSignal
from orkestrel.core.errors import ProviderError
from orkestrel.core.messages import Message, ToolCall
from orkestrel.core.provider import (
    ContentDelta,
    ProviderResult,
    ProviderStreamOptions,
    ThinkingDelta,
    ToolDefinition,
)
from orkestrel.core.usage import TokenUsage
from orkestrel.providers.openai import OpenAIProvider

from .conftest import collect
from .server import Reply, StubServer, sse

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def usage_chunk(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }


def provider(stub: StubServer, **options: Any) -> OpenAIProvider:
    options.setdefault("retries", 0)
    return OpenAIProvider(model="gpt-4o-mini", base_url=stub.url + "/v1", **options)


async def test_text_stream_yields_each_delta_and_the_usage_only_final_chunk(
    stub: StubServer,
) -> None:
    stub.enqueue(
        Reply(
            sse(
                chunk({"role": "assistant", "content": "", "refusal": None}),
                chunk({"content": "Hello"}),
                chunk({"content": " world"}),
                chunk({}, "stop"),
                usage_chunk(9, 2),
                done=True,
            )
        )
    )
    deltas, result = await collect(provider(stub, api_key="sk-test"))
    assert deltas == [ContentDelta("Hello"), ContentDelta(" world")]
    assert result == ProviderResult("Hello world", None, None, TokenUsage(9, 2, 11), "stop")
    sent = stub.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.json() == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_tool_call_arguments_split_mid_token_assemble_per_index(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            sse(
                chunk(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_abc",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ],
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"lo'}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'cation": "Par'}}]}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 1,
                                "type": "function",
                                "function": {"name": "get_time", "arguments": '{"tz": 1'},
                            }
                        ]
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'is"}'}}]}),
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": "2}"}}]}),
                chunk({}, "tool_calls"),
                usage_chunk(80, 30),
                done=True,
            )
        )
    )
    deltas, result = await collect(provider(stub))
    assert deltas == []
    assert result.stop_reason == "tool_calls"
    assert result.usage == TokenUsage(80, 30, 110)
    assert result.tools is not None
    first, second = result.tools
    assert first == ToolCall("call_abc", "get_weather", {"location": "Paris"})
    assert (second.name, second.arguments) == ("get_time", {"tz": 12})
    uuid.UUID(second.id)  # the wire gave no id: one was minted


async def test_reasoning_content_and_reasoning_fields_stream_as_thinking(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            sse(
                chunk({"role": "assistant", "content": None, "reasoning_content": "Let me"}),
                chunk({"reasoning_content": " think."}),
                chunk({"reasoning": " Still."}),
                chunk({"content": "42"}),
                chunk({}, "stop"),
                done=True,
            )
        )
    )
    deltas, result = await collect(provider(stub, include_usage=False))
    assert deltas == [
        ThinkingDelta("Let me"),
        ThinkingDelta(" think."),
        ThinkingDelta(" Still."),
        ContentDelta("42"),
    ]
    assert result == ProviderResult("42", "Let me think. Still.", None, None, "stop")
    assert "stream_options" not in stub.requests[0].json()


async def test_think_tags_split_across_chunks_are_separated_from_the_answer(
    stub: StubServer,
) -> None:
    pieces = ["<thi", "nk>plan", " more</th", "ink>\n\nAns", "wer"]
    stub.enqueue(
        Reply(sse(*(chunk({"content": piece}) for piece in pieces), chunk({}, "stop"), done=True))
    )
    deltas, result = await collect(provider(stub))
    assert deltas == [
        ThinkingDelta("plan"),
        ThinkingDelta(" more"),
        ContentDelta("Ans"),
        ContentDelta("wer"),
    ]
    assert (result.content, result.thinking) == ("Answer", "plan more")


async def test_sse_lines_cut_anywhere_even_inside_a_utf8_character_decode_whole(
    stub: StubServer,
) -> None:
    body = b"".join(
        sse(chunk({"content": "h\u00e9llo "}), chunk({"content": "\U0001f30d"}), done=True)
    )
    cuts = [0, 3, 41, body.index("\u00e9".encode()) + 1, body.index(b"\xf0") + 2, len(body)]
    pieces = [body[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]
    stub.enqueue(Reply(pieces))
    deltas, result = await collect(provider(stub))
    assert deltas == [ContentDelta("h\u00e9llo "), ContentDelta("\U0001f30d")]
    assert result.content == "h\u00e9llo \U0001f30d"


async def test_an_unparsable_event_raises_a_provider_error_with_an_excerpt(
    stub: StubServer,
) -> None:
    stub.enqueue(Reply([*sse(chunk({"content": "ok"})), b"data: {not json\n\n", *sse(done=True)]))
    seen: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async for item in provider(stub).stream([], AbortSignal()):
            seen.append(item)
    assert seen == [ContentDelta("ok")]
    assert "malformed stream" in str(caught.value)
    assert caught.value.body == "{not json"
    assert (caught.value.provider, caught.value.status) == ("openai", None)


async def test_an_error_event_inside_the_stream_raises(stub: StubServer) -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error"}}
    stub.enqueue(Reply(sse(chunk({"content": "par"}), error)))
    with pytest.raises(ProviderError, match="reported an error mid-stream") as caught:
        await collect(provider(stub))
    # The server's words are the log's and ``body``'s, never the message users read.
    assert "The server had an error" not in str(caught.value)
    assert "The server had an error" in (caught.value.body or "")


async def test_a_stream_ending_without_finish_or_done_is_a_broken_stream(stub: StubServer) -> None:
    stub.enqueue(Reply(sse(chunk({"content": "cut"}))))
    with pytest.raises(ProviderError, match="ended before the turn completed"):
        await collect(provider(stub))


async def test_messages_tools_think_and_schema_map_onto_the_request(stub: StubServer) -> None:
    stub.enqueue(Reply(sse(chunk({"content": "{}"}, "stop"), done=True)))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is this?", "images": [PNG]},
        {
            "role": "assistant",
            "content": "",
            "calls": [
                {"id": "c1", "name": "look", "arguments": {"q": "a"}},
                {"id": "c2", "name": "look", "arguments": {"q": "b"}},
            ],
        },
        {"role": "tool", "content": "A", "tool_call_id": "c1"},
        {"role": "tool", "content": "B"},
        {"role": "tool", "content": "stray"},
    ]
    tool = ToolDefinition("look", "Look something up", {"type": "object", "properties": {}})
    schema = {"title": "An answer!", "type": "object"}
    await collect(
        provider(stub),
        messages,
        tools=[tool, {"name": "bare"}],
        options=ProviderStreamOptions(think="max", schema=schema),
    )
    body = stub.requests[0].json()
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "look", "arguments": '{"q": "a"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "look", "arguments": '{"q": "b"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": "B"},
        {"role": "user", "content": "stray"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "look",
                "description": "Look something up",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {"type": "function", "function": {"name": "bare", "parameters": {"type": "object"}}},
    ]
    assert body["reasoning_effort"] == "xhigh"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "An_answer_", "schema": schema},
    }


@pytest.mark.parametrize(
    ("think", "effort"),
    [(True, "medium"), (False, "none"), ("none", "none"), ("low", "low"), ("high", "high")],
)
async def test_each_thinking_setting_maps_to_a_reasoning_effort(
    stub: StubServer, think: Any, effort: str
) -> None:
    stub.enqueue(Reply(sse(chunk({}, "stop"), done=True)))
    await collect(provider(stub), options={"think": think})
    assert stub.requests[0].json()["reasoning_effort"] == effort


async def test_an_unknown_thinking_level_is_refused_before_any_request(stub: StubServer) -> None:
    with pytest.raises(ValueError, match=r"options\.think"):
        await collect(provider(stub), options={"think": "extreme"})
    assert stub.requests == []


async def test_extra_body_and_headers_reach_the_request(stub: StubServer) -> None:
    stub.enqueue(Reply(sse(chunk({}, "stop"), done=True)))
    chosen = provider(stub, extra_body={"temperature": 0.2}, headers={"x-trace": "t1"})
    await chosen.generate([Message("m1", "user", "hi")], AbortSignal())
    assert stub.requests[0].json()["temperature"] == 0.2
    assert stub.requests[0].headers["x-trace"] == "t1"


async def test_generate_returns_the_same_result_the_stream_assembles(stub: StubServer) -> None:
    frames = sse(chunk({"content": "Hi"}), chunk({}, "stop"), usage_chunk(3, 1), done=True)
    stub.enqueue(Reply(frames), Reply(frames))
    chosen = provider(stub)
    _, streamed = await collect(chosen)
    generated = await chosen.generate([{"role": "user", "content": "hi"}], AbortSignal())
    assert generated == streamed == ProviderResult("Hi", None, None, TokenUsage(3, 1, 4), "stop")


async def test_malformed_tool_arguments_become_a_call_error_not_a_guess(stub: StubServer) -> None:
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{oops"}}
    stub.enqueue(Reply(sse(chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), done=True)))
    _, result = await collect(provider(stub))
    assert result.tools == (ToolCall("c", "f", {}, "arguments are not a JSON object: '{oops'"),)


async def test_double_encoded_arguments_are_unwrapped(stub: StubServer) -> None:
    encoded = json.dumps(json.dumps({"a": 1}))
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": encoded}}
    stub.enqueue(Reply(sse(chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), done=True)))
    _, result = await collect(provider(stub))
    assert result.tools == (ToolCall("c", "f", {"a": 1}),)


async def test_fragments_without_an_index_open_a_call_per_new_id(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            sse(
                chunk(
                    {"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x"'}}]}
                ),
                chunk({"tool_calls": [{"function": {"arguments": ": 1}"}}]}),
                chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
                chunk({}, "tool_calls"),
                done=True,
            )
        )
    )
    _, result = await collect(provider(stub))
    assert result.tools == (ToolCall("a", "f", {"x": 1}), ToolCall("b", "g", {}))


async def test_cached_input_and_reasoning_are_counted_from_the_usage_details(
    stub: StubServer,
) -> None:
    # OpenAI's shape: the details are subsets of prompt_tokens and completion_tokens.
    usage = usage_chunk(2006, 300)
    usage["usage"]["prompt_tokens_details"] = {"cached_tokens": 1920, "audio_tokens": 0}
    usage["usage"]["completion_tokens_details"] = {
        "reasoning_tokens": 192,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    }
    stub.enqueue(Reply(sse(chunk({"content": "Hi"}), chunk({}, "stop"), usage, done=True)))
    _, result = await collect(provider(stub))
    assert result.usage == TokenUsage(2006, 300, 2306, cache_read=1920, reasoning=192)
    assert result.usage is not None and result.usage.latest_prompt == 2006
