"""A loopback HTTP/1.1 server for the provider tests: one canned ``Reply`` per request.

It runs its own event loop in a thread, so the test's loop holds only the client's tasks
(the abort tests count them). Each request pops the next scripted reply and is recorded
(method, path, headers, JSON body), so a later test can script a whole multi-turn exchange
and inspect what the client sent. Streams are written with chunked encoding, one network
write per chunk; a reply can also drop the connection mid-body or hold it open until the
client goes away (recording when the close was seen).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 429: "Too Many Requests"}


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``chunks`` are written one by one (chunked encoding for a 2xx, one body otherwise);
    ``drop_after`` cuts the socket after that many chunks; ``hold`` keeps the response open
    after the chunks until the client closes it; ``pause`` sleeps before each chunk; ``gate``
    (a ``threading.Event``) holds the last chunk back until the test sets it.
    """

    chunks: Sequence[bytes] = ()
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    drop_after: int | None = None
    hold: bool = False
    pause: float = 0.0
    gate: threading.Event | None = None


@dataclass(frozen=True)
class Request:
    """What the client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class StubServer:
    """The server: ``enqueue`` replies, point a provider at ``url``, read ``requests``."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._replies: deque[Reply] = deque()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        # Set when a held response sees its client go away; ``closed_at`` is monotonic time.
        self.closed = threading.Event()
        self.closed_at: float | None = None
        # Set once a held response has written all its chunks.
        self.holding = threading.Event()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Replies not yet consumed."""
        return len(self._replies)

    def start(self) -> StubServer:
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)

        self._call(shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; ``False`` once the connection is done."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append(Request(method, path, headers, body))
        reply = self._replies.popleft() if self._replies else Reply([b"no reply scripted"], 599)
        if reply.status >= 300:
            payload = b"".join(reply.chunks)
            writer.write(self._head(reply, {"content-length": str(len(payload))}) + payload)
            await writer.drain()
            return True
        writer.write(self._head(reply, {"transfer-encoding": "chunked"}))
        await writer.drain()
        for count, chunk in enumerate(reply.chunks):
            if reply.drop_after is not None and count >= reply.drop_after:
                writer.transport.abort()
                return False
            if reply.pause:
                await asyncio.sleep(reply.pause)
            if reply.gate is not None and count == len(reply.chunks) - 1:
                await asyncio.get_running_loop().run_in_executor(None, reply.gate.wait, 10.0)
            try:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            except ConnectionError:
                self._mark_closed()  # the client went away while we were still writing
                return False
        if reply.hold:
            self.holding.set()
            await self._watch(reader)
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _watch(self, reader: asyncio.StreamReader) -> None:
        try:
            while await reader.read(1024):
                pass
        except ConnectionError:
            pass
        self._mark_closed()

    def _mark_closed(self) -> None:
        self.closed_at = time.monotonic()
        self.closed.set()

    @staticmethod
    def _head(reply: Reply, extra: dict[str, str]) -> bytes:
        reason = REASONS.get(reply.status, "Status")
        headers = {"content-type": reply.content_type, **extra, **reply.headers}
        lines = [f"HTTP/1.1 {reply.status} {reason}"]
        lines += [f"{key}: {value}" for key, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def sse(*events: Any, named: bool = False, done: bool = False) -> list[bytes]:
    """One SSE frame per event (a dict, or raw bytes sent verbatim).

    ``named`` adds the ``event:`` line Anthropic sends; ``done`` appends ``data: [DONE]``.
    """
    frames = []
    for event in events:
        if isinstance(event, bytes):
            frames.append(event)
            continue
        data = json.dumps(event, ensure_ascii=False)
        prefix = f"event: {event['type']}\n" if named else ""
        frames.append(f"{prefix}data: {data}\n\n".encode())
    if done:
        frames.append(b"data: [DONE]\n\n")
    return frames


def ndjson(*lines: Any) -> list[bytes]:
    """One NDJSON line per item (a dict, or raw bytes sent verbatim)."""
    return [
        line if isinstance(line, bytes) else json.dumps(line, ensure_ascii=False).encode() + b"\n"
        for line in lines
    ]
