"""The server ``make run`` starts (``orkestrel.server``): a websocket frame over the app's
limit gets a ``too_large`` error frame on a socket that stays open; one over the transport's
limit closes the socket with ``1009`` (message too big) and its reason, not a dropped
connection. A request body over the limit is refused as soon as the server can know it, not
after it was taken in."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError

from .conftest import Server

pytestmark = pytest.mark.e2e

SEED = """
from django.contrib.auth import get_user_model
from conversations.services import create_conversation
print(create_conversation(user=get_user_model().objects.get(username="alice"), title="big").id)
"""
WAIT = 30.0
TRANSPORT_LIMIT = 32 * 2**20  # the Makefile's WEBSOCKET_LIMITS


def in_own_loop(coroutine: Any) -> Any:
    """The browser tests' sync Playwright keeps a loop running on this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def frames(server: Server, conversation: str, sent: list[str]) -> list[Any]:
    """Send each text in turn on a socket signed in as alice; what came back for each (a
    frame, or the close code and reason)."""
    got: list[Any] = []
    async with connect(
        server.url.replace("http://", "ws://") + f"/ws/conversations/{conversation}/",
        origin=server.url,
        additional_headers={"Cookie": f"{server.cookie}={server.sessions['alice']}"},
        proxy=None,
        max_size=None,
        open_timeout=WAIT,
    ) as socket:
        assert json.loads(await asyncio.wait_for(socket.recv(), WAIT))["type"] == "state"
        for text in sent:
            try:
                await socket.send(text)
                got.append(json.loads(await asyncio.wait_for(socket.recv(), WAIT)))
            except ConnectionClosedError as closed:
                assert closed.rcvd is not None, "the connection dropped without a close frame"
                got.append((closed.rcvd.code, closed.rcvd.reason))
                break
    return got


def test_a_frame_over_the_transport_limit_closes_the_socket_with_1009(server: Server) -> None:
    conversation = server.shell(SEED).strip().splitlines()[-1]
    big = json.dumps({"type": "send", "content": "x" * (2 * 2**20)})
    huge = json.dumps({"type": "send", "content": "x" * (TRANSPORT_LIMIT + 1)})
    resync = json.dumps({"type": "resync"})

    got = in_own_loop(frames(server, conversation, [big, resync, huge]))

    too_large, state, closed = got
    assert (too_large["type"], too_large["code"]) == ("error", "too_large")
    assert state["type"] == "state"  # the socket stayed usable
    code, reason = closed
    assert code == 1009 and str(TRANSPORT_LIMIT) in reason


def _raw(server: Server) -> socket.socket:
    parts = urlsplit(server.url)
    connection = socket.create_connection((parts.hostname, parts.port), timeout=WAIT)
    return connection


def _response(connection: socket.socket) -> bytes:
    """What the server sent until it closed the connection."""
    got = b""
    while chunk := connection.recv(65536):
        got += chunk
    return got


def test_a_declared_body_over_the_limit_is_refused_before_any_of_it_is_sent(
    server: Server,
) -> None:
    headers = (
        "POST /api/conversations/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {10 * 2**30}\r\n\r\n"
    )
    began = time.monotonic()
    with _raw(server) as connection:
        connection.sendall(headers.encode())
        answer = _response(connection)
    took = time.monotonic() - began
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), answer[:200]
    assert json.loads(body)["code"] == "too_large"
    assert took < 5.0  # not waited for: none of the 10 GiB was sent


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server: Server) -> None:
    limit = 64 * 2**20  # ORKESTREL_MAX_REQUEST_BYTES's default
    chunk = b"x" * 2**20
    sent = 0
    with _raw(server) as connection:
        connection.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        try:
            while sent < 4 * limit:
                connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused: the server closed its side
        answer = _response(connection)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_too_large"
    assert sent < 2 * limit
