"""The SSE benchmark's clients: ``httpx`` over HTTP/1.1, one connection per stream.

Each stream is its own ``httpx.AsyncClient`` holding one kept-alive connection, opened before
the run with a ``GET /healthz`` (as the websocket benchmark opens its sockets first), so the
``POST .../messages/`` with ``Accept: text/event-stream`` pays no TCP handshake. Each records
``time.monotonic()`` the moment ``httpx`` hands over a chunk of the body, before parsing it;
``bench/relay_app.py`` stamps every delta with the same system-wide clock. The frames land in
the shape ``relay_clients.Figures`` reads (``frames``, ``sent``, ``dropped``).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["Stream", "close", "open_stream", "parse_events"]

TERMINAL = ("finish", "error")
# Every stream's client is plain HTTP, but ``httpx`` builds an SSL context per client unless
# given one: 200 of them cost seconds of start-up for nothing.
_SSL = ssl.create_default_context()


def parse_events(block: bytes) -> tuple[int | None, dict[str, Any] | None]:
    """``(id, frame)`` of one SSE event (the text between blank lines); ``None`` for a comment."""
    event_id: int | None = None
    data: list[str] = []
    for line in block.decode().split("\n"):
        if line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            data.append(line[6:])
    return event_id, (json.loads("\n".join(data)) if data else None)


@dataclass
class Stream:
    conversation_id: str
    http: httpx.AsyncClient
    sent: float = 0.0  # the POST went out
    headers: float = 0.0  # the response's status line and headers arrived
    frames: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    dropped: int | None = None  # HTTP status, or -1: the stream broke before its run ended
    error: str = ""
    bad_ids: int = 0  # events whose ``id:`` is not their frame's ``seq``
    chunks: int = 0  # body chunks ``httpx`` handed over (several events may share one)

    async def post(self, content: str) -> None:
        """Send ``content`` and read the run's events to the end of the response."""
        url = f"/api/conversations/{self.conversation_id}/messages/"
        headers = {"Accept": "text/event-stream"}
        self.sent = time.monotonic()
        try:
            async with self.http.stream(
                "POST", url, json={"content": content}, headers=headers
            ) as response:
                self.headers = time.monotonic()
                if response.status_code != 200:
                    self.dropped = response.status_code
                    self.error = (await response.aread()).decode(errors="replace")[:300]
                    return
                await self._read(response)
        except httpx.HTTPError as error:
            self.dropped = -1
            self.error = repr(error)

    async def _read(self, response: httpx.Response) -> None:
        pending = b""
        finished = False
        async for chunk in response.aiter_raw():
            # The clock is read first: parsing is client cost, not relay latency.
            at = time.monotonic()
            self.chunks += 1
            *blocks, pending = (pending + chunk).split(b"\n\n")
            for block in blocks:
                event_id, frame = parse_events(block)
                if frame is None:
                    continue  # a keep-alive comment
                self.bad_ids += event_id != frame.get("seq")
                self.frames.append((at, frame))
                finished = finished or frame.get("type") in TERMINAL
        if not finished:
            self.dropped = -1
            self.error = "the response ended before the run's finish event"


async def open_stream(port: int, key: str, conversation_id: str) -> Stream:
    """A client with one connection to the server, opened (and kept alive) by a GET."""
    http = httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {key}"},
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        timeout=httpx.Timeout(120.0),
        verify=_SSL,
    )
    answer = await http.get("/healthz")
    answer.raise_for_status()
    return Stream(conversation_id, http)


async def close(streams: list[Stream]) -> None:
    await asyncio.gather(*(stream.http.aclose() for stream in streams))
