"""The peers benchmark's clients: one kept-alive HTTP/1.1 connection each, REST + SSE.

The same minimal asyncio client drives both servers (``bench/openai_clients.py`` explains why
not ``httpx``: at thousands of events a second it takes a core the servers need). It creates
the run's conversation or thread with a JSON request, then sends the run and reads its SSE
body, noting ``time.monotonic()`` the moment a read returns, before parsing; the upstream
stamps each delta with the same system-wide clock. A server's events reach a ``Run`` through
its dialect: orkestrel's run frames, or LangGraph's ``messages-tuple`` (one chunk an event) or
``messages`` (``messages/partial``: the whole message so far, every event).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openai_upstream import MARKER

__all__ = ["DIALECTS", "Connection", "Dialect", "Run"]

_EVENT_END = re.compile(rb"\r?\n\r?\n")


@dataclass
class Run:
    """One streamed run as the client saw it (times are ``time.monotonic()``)."""

    sent: float = math.nan
    first_event: float = math.nan  # the server's first SSE event (not a comment)
    first_token: float = math.nan  # the first delta's marker arrived
    tokens: list[tuple[float, int, float]] = field(default_factory=list)  # at, index, stamp
    status: int | None = None
    ended: bool = False  # the server said the run ended well (finish / finish_reason stop)
    closed: bool = False  # the response body ended (its last chunk)
    error: str = ""
    carry: str = ""  # text after the last whole marker: a delta may arrive split
    seen: int = 0  # ``messages/partial``: how much of the message was read already

    def take(self, at: float, text: str) -> None:
        """Read the whole markers in ``text`` (after what was carried over)."""
        text = self.carry + text
        end = 0
        for found in MARKER.finditer(text):
            self.tokens.append((at, int(found[1]), int(found[2]) / 1e6))
            end = found.end()
        self.carry = text[end:]
        if self.tokens and math.isnan(self.first_token):
            self.first_token = self.tokens[0][0]

    def complete(self, count: int) -> bool:
        """Every delta once, in order, a proper end, the body ended, no error."""
        indices = [index for _, index, _ in self.tokens]
        return (
            self.status == 200
            and not self.error
            and self.ended
            and self.closed
            and indices == list(range(count))
        )

    def why(self) -> str:
        """What went wrong, in a line."""
        if self.error:
            return " ".join(self.error.split())[:200]
        return (
            f"status {self.status}, {len(self.tokens)} deltas, ended {self.ended}, "
            f"closed {self.closed}"
        )


type Dialect = Callable[[Run, float, str, Any], None]  # (run, arrival, event name, data)


def orkestrel_event(run: Run, at: float, event: str, frame: Any) -> None:
    """Orkestrel's run frames: ``started``, ``token`` (several deltas may share one), ``finish``."""
    match frame.get("type"):
        case "token":
            run.take(at, frame["content"])
        case "finish":
            run.ended = True
        case "error":
            run.error = json.dumps(frame)[:300]


def _chunk_end(run: Run, message: dict[str, Any]) -> None:
    if (message.get("response_metadata") or {}).get("finish_reason") == "stop":
        run.ended = True


def langgraph_event(run: Run, at: float, event: str, data: Any) -> None:
    """LangGraph's events: ``metadata`` first, then the model's chunks, the stream's end last."""
    if event == "messages":  # ``messages-tuple``: [chunk, metadata], one chunk each
        run.take(at, data[0].get("content") or "")
        _chunk_end(run, data[0])
    elif event == "messages/partial":  # ``messages``: [the message so far]
        content = data[0].get("content") or ""
        run.take(at, content[run.seen :])
        run.seen = len(content)
        _chunk_end(run, data[0])
    elif event == "error":
        run.error = json.dumps(data)[:300]


DIALECTS: dict[str, Dialect] = {"orkestrel": orkestrel_event, "langgraph": langgraph_event}


def _read_block(run: Run, at: float, block: bytes, dialect: Dialect) -> None:
    event, data = "message", []
    for line in block.decode().splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if not data:
        return  # a comment (keep-alive)
    if math.isnan(run.first_event):
        run.first_event = at
    dialect(run, at, event, json.loads("\n".join(data)))


class Connection:
    """One kept-alive HTTP/1.1 connection: JSON requests, then one streamed run at a time."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.port = port
        self.headers = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self.at = 0.0  # when the last read returned
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    def _send(self, method: str, path: str, body: object, accept: str) -> None:
        assert self.writer is not None
        payload = json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n{self.headers}"
            f"Content-Type: application/json\r\nAccept: {accept}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)

    async def call(self, method: str, path: str, body: object) -> tuple[int, Any]:
        """One JSON request: its status and its decoded answer."""
        self._send(method, path, body, "application/json")
        parts: list[bytes] = []
        status = await self._response(parts.append)
        return status, json.loads(b"".join(parts) or b"null")

    async def stream(self, path: str, body: object, run: Run, dialect: Dialect) -> None:
        """Send one run and read its events into ``run`` to the end of the response."""
        run.sent = time.monotonic()
        pending = b""
        failed: list[bytes] = []

        def events(data: bytes) -> None:
            nonlocal pending
            if run.status != 200:
                failed.append(data)
                return
            *blocks, pending = _EVENT_END.split(pending + data)
            for block in blocks:
                _read_block(run, self.at, block, dialect)

        try:
            self._send("POST", path, body, "text/event-stream")
            await self._response(events, run)
            run.closed = True
        except (OSError, ValueError, KeyError, IndexError) as error:
            run.error = repr(error)[:300]
        if failed:
            run.error = b"".join(failed).decode(errors="replace")[:300]

    async def _more(self, buffer: bytes) -> bytes:
        assert self.reader is not None
        data = await self.reader.read(65536)
        self.at = time.monotonic()  # first: parsing is client cost, not the server's
        if not data:
            raise ConnectionError("the server closed the connection mid-response")
        return buffer + data

    async def _response(self, body: Callable[[bytes], None], run: Run | None = None) -> int:
        """Read one response, handing its body to ``body`` piece by piece; its status."""
        buffer = b""
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            buffer = await self._more(buffer)
        status_line, *lines = buffer[:end].decode("latin-1").split("\r\n")
        buffer = buffer[end + 4 :]
        status = int(status_line.split()[1])
        if run is not None:
            run.status = status
        headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
        if "chunked" not in headers.get("transfer-encoding", "").lower():
            length = int(headers.get("content-length", "0"))
            while len(buffer) < length:
                buffer = await self._more(buffer)
            body(buffer[:length])
            return status
        while True:  # one chunk of the body: its size line, its data, CRLF
            while (line := buffer.find(b"\r\n")) < 0:
                buffer = await self._more(buffer)
            size = int(buffer[:line].split(b";")[0], 16)
            while len(buffer) < line + size + 4:
                buffer = await self._more(buffer)
            data, buffer = buffer[line + 2 : line + 2 + size], buffer[line + size + 4 :]
            if not size:
                return status  # the last chunk (no trailers: neither server sends any)
            body(data)

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()
