"""Streamed tool calls reach ``HttpProvider.on_call`` piece by piece, on every wire: the
pieces of one call join to its arguments, in the order the model wrote them."""

from __future__ import annotations

import json

import pytest

from orkestrel.providers.anthropic import AnthropicProvider
from orkestrel.providers.base import CallDelta, HttpProvider
from orkestrel.providers.ollama import OllamaProvider
from orkestrel.providers.openai import OpenAIProvider

from .conftest import collect
from .server import Reply, StubServer, sse
from .turns import reply

CALLS = [("c1", "write", {"path": "a.md", "text": "hello"}), ("c2", "read", {"path": "b"})]


def chunk(delta: dict) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def joined(deltas: list[CallDelta]) -> dict[int, tuple[str | None, str | None, str]]:
    calls: dict[int, tuple[str | None, str | None, str]] = {}
    for delta in deltas:
        call_id, name, text = calls.get(delta.index, (None, None, ""))
        calls[delta.index] = (call_id or delta.id, name or delta.name, text + delta.arguments)
    return calls


def made(kind: str, stub: StubServer) -> HttpProvider:
    if kind == "openai":
        return OpenAIProvider(model="m", base_url=stub.url + "/v1", retries=0)
    if kind == "anthropic":
        return AnthropicProvider(model="m", base_url=stub.url, api_key="k", retries=0)
    return OllamaProvider(model="m", base_url=stub.url, retries=0)


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
async def test_each_wire_tells_the_listener_every_call_it_streams(
    kind: str, stub: StubServer
) -> None:
    stub.enqueue(reply(kind, ["Let me."], calls=CALLS))
    provider = made(kind, stub)
    heard: list[CallDelta] = []
    provider.on_call = heard.append
    _, result = await collect(provider)
    assert result.tools is not None and len(result.tools) == 2
    told = [(name, json.loads(text)) for _, name, text in joined(heard).values()]
    assert told == [(name, arguments) for _, name, arguments in CALLS]


async def test_openai_pieces_arrive_as_written_interleaved_by_index(stub: StubServer) -> None:
    first = {"index": 0, "id": "call_a", "function": {"name": "write", "arguments": ""}}
    stub.enqueue(
        Reply(
            sse(
                chunk({"tool_calls": [first]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
                chunk({"tool_calls": [{"index": 1, "function": {"name": "read"}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": 1}'}}]}),
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                done=True,
            )
        )
    )
    provider = made("openai", stub)
    heard: list[CallDelta] = []
    provider.on_call = heard.append
    await collect(provider)
    assert heard == [
        CallDelta(0, "call_a", "write", ""),
        CallDelta(0, "call_a", "write", '{"pa'),
        CallDelta(1, None, "read", ""),
        CallDelta(0, "call_a", "write", 'th": 1}'),
    ]


async def test_a_listener_that_raises_does_not_break_the_stream(stub: StubServer) -> None:
    stub.enqueue(reply("openai", calls=CALLS))
    provider = made("openai", stub)

    def broken(delta: CallDelta) -> None:
        raise RuntimeError("listener bug")

    provider.on_call = broken
    _, result = await collect(provider)
    assert result.tools is not None and [call.name for call in result.tools] == ["write", "read"]
