"""The streaming transport: sessions closed with their loop, proxies from the environment."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from orkestrel.providers.openai import OpenAIProvider
from orkestrel.providers.transport import streaming_transport

from .conftest import collect
from .server import Reply, StubServer, sse

ROOT = Path(__file__).resolve().parents[2]
DELTA = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}


async def _fetch(url: str) -> tuple[httpx.AsyncBaseTransport, bytes]:
    transport = streaming_transport(secure=False)
    client = httpx.AsyncClient(transport=transport)
    response = await client.post(url, json={})
    return transport, response.content


def test_a_session_is_closed_when_its_loop_shuts_down(stub: StubServer) -> None:
    stub.enqueue(Reply(sse(DELTA, done=True)))
    transport, body = asyncio.run(_fetch(f"{stub.url}/chat/completions"))
    assert b"[DONE]" in body
    session = transport.client  # type: ignore[attr-defined]  # the session it opened
    assert session.closed


def test_a_loop_only_stopped_closes_its_sessions_at_exit_without_a_warning(
    stub: StubServer,
) -> None:
    # Daphne stops its loop without shutting its generators down; the process then exits.
    stub.enqueue(Reply(sse(DELTA, done=True)))
    script = f"""
import asyncio, httpx
from orkestrel.providers.transport import streaming_transport

async def fetch():
    client = httpx.AsyncClient(transport=streaming_transport(secure=False))
    print((await client.post("{stub.url}/chat/completions", json={{}})).status_code)
    asyncio.get_running_loop().stop()

loop = asyncio.new_event_loop()
loop.create_task(fetch())
loop.run_forever()
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "200"
    assert done.stderr == ""  # aiohttp's "Unclosed client session" would be here


async def test_a_proxy_named_in_the_environment_carries_the_request(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", stub.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    stub.enqueue(Reply(sse(DELTA, done=True)))
    provider = OpenAIProvider(model="m", base_url="http://model.invalid/v1", api_key="k")
    try:
        _, result = await collect(provider)
    finally:
        await provider.aclose()
    assert result.content == "hi"
    [request] = stub.requests
    # A proxy is sent the absolute URL of the request it forwards.
    assert request.path == "http://model.invalid/v1/chat/completions"


async def test_a_host_named_in_no_proxy_is_reached_directly(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: a used proxy fails
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    stub.enqueue(Reply(sse(DELTA, done=True)))
    provider = OpenAIProvider(model="m", base_url=f"{stub.url}/v1", api_key="k")
    try:
        _, result = await collect(provider)
    finally:
        await provider.aclose()
    assert result.content == "hi"
    assert [request.path for request in stub.requests] == ["/v1/chat/completions"]
