"""The model a server reports answering reaches ``HttpProvider.on_model`` once per turn, on
every wire (Chat Completions chunks, Anthropic's ``message_start``, Ollama lines)."""

from __future__ import annotations

import pytest

from orkestrel.providers.anthropic import AnthropicProvider
from orkestrel.providers.base import HttpProvider
from orkestrel.providers.ollama import OllamaProvider
from orkestrel.providers.openai import OpenAIProvider

from .conftest import collect
from .server import Reply, StubServer, sse
from .turns import reply


def made(kind: str, stub: StubServer) -> HttpProvider:
    if kind == "openai":
        return OpenAIProvider(model="asked", base_url=stub.url + "/v1", retries=0)
    if kind == "anthropic":
        return AnthropicProvider(model="asked", base_url=stub.url, api_key="k", retries=0)
    return OllamaProvider(model="asked", base_url=stub.url, retries=0)


def openai_chunk(delta: dict, finish: str | None = None) -> dict:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"object": "chat.completion.chunk", "model": "gpt-x-0601", "choices": [choice]}


def anthropic_events() -> list[dict]:
    start = {"model": "claude-x-2026", "usage": {"input_tokens": 3}}
    block = {"type": "text", "text": ""}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
    ]


REPLIES = {
    "openai": (
        lambda: Reply(sse(openai_chunk({"content": "ok"}), openai_chunk({}, "stop"), done=True)),
        "gpt-x-0601",
    ),
    "anthropic": (lambda: Reply(sse(*anthropic_events(), named=True)), "claude-x-2026"),
    # The stub's Ollama lines name the model ``m``, on every line.
    "ollama": (lambda: reply("ollama", ["o", "k"]), "m"),
}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
async def test_each_wire_tells_the_listener_the_reported_model_once(
    kind: str, stub: StubServer
) -> None:
    answer, reported = REPLIES[kind]
    stub.enqueue(answer())
    provider = made(kind, stub)
    heard: list[str] = []
    provider.on_model = heard.append
    _, result = await collect(provider)
    assert result.content == "ok"
    assert heard == [reported]


async def test_a_stream_that_names_no_model_tells_the_listener_nothing(
    stub: StubServer,
) -> None:
    stub.enqueue(reply("openai", ["ok"]))
    provider = made("openai", stub)
    heard: list[str] = []
    provider.on_model = heard.append
    await collect(provider)
    assert heard == []
