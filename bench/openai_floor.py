"""The floor of an OpenAI-compatible endpoint under Daphne: what any implementation pays.

``daphne bench.openai_floor:application`` (``bench/openai_compat.py --floor``) answers
``POST /v1/chat/completions`` by sending the request on to the upstream (``BENCH_UPSTREAM``)
through the app's own streaming transport and writing each upstream event back as one SSE
event, its JSON parsed and written again with the client's ``model`` (as a server in
between must). No Django, no database, no run, no keys: the same server, transport and wire
work as the app, and nothing else. ``GET /healthz`` answers 200 for the launcher.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orkestrel.providers.transport import streaming_transport

__all__ = ["application"]

UPSTREAM = os.environ.get("BENCH_UPSTREAM", "http://127.0.0.1:8001/v1")
_clients: list[httpx.AsyncClient] = []


def _client() -> httpx.AsyncClient:
    if not _clients:
        _clients.append(httpx.AsyncClient(transport=streaming_transport(secure=False), timeout=60))
    return _clients[0]


async def _body(receive: Any) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _plain(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI app: the proxy route, ``/healthz``, else 404."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/healthz":
        await _plain(send, 200, b"ok")
        return
    if scope["path"] != "/v1/chat/completions" or scope["method"] != "POST":
        await _plain(send, 404, b"not found")
        return
    request = json.loads(await _body(receive))
    model = request["model"]
    request["model"] = "bench"
    async with _client().stream("POST", f"{UPSTREAM}/chat/completions", json=request) as answer:
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        buffer = b""
        async for chunk in answer.aiter_raw():
            buffer += chunk
            *events, buffer = buffer.split(b"\n\n")
            for event in events:
                data = event.removeprefix(b"data: ")
                if data == b"[DONE]":
                    out = b"data: [DONE]\n\n"
                else:
                    payload = json.loads(data)
                    payload["model"] = model
                    out = f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()
                await send({"type": "http.response.body", "body": out, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
