"""The OpenAI benchmark's clients: one kept-alive HTTP/1.1 connection each, one stream at a time.

Each client notes ``time.monotonic()`` the moment a read of the body returns, before parsing
it; ``bench/openai_upstream.py`` stamps every delta with the same system-wide clock. What
arrives lands in a ``Reply``: the content deltas' markers (index, stamp, lag) with their
arrival times, the ``finish_reason``, ``[DONE]`` and whether a usage chunk came.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from openai_upstream import MARKER

__all__ = ["CLIENTS", "PATH", "Client", "HttpxClient", "RawClient", "Reply"]

PATH = "/v1/chat/completions"
_EVENT_END = re.compile(rb"\r?\n\r?\n")
# Every client is plain HTTP, but ``httpx`` builds an SSL context per client unless given one.
_SSL = ssl.create_default_context()


@dataclass
class Reply:
    """One streamed completion as the client saw it (times are ``time.monotonic()``)."""

    sent: float = math.nan
    headers: float = math.nan
    first: float = math.nan  # the first content delta arrived
    tokens: list[tuple[float, int, float, float]] = field(default_factory=list)  # at, i, stamp, lag
    status: int | None = None
    finish: str | None = None
    done: bool = False  # ``data: [DONE]`` arrived
    usage: bool = False
    error: str = ""

    def complete(self, count: int) -> bool:
        """Every delta once, in order, then ``finish_reason: stop`` and ``[DONE]``."""
        indices = [index for _, index, _, _ in self.tokens]
        return (
            self.status == 200
            and not self.error
            and indices == list(range(count))
            and self.finish == "stop"
            and self.done
        )

    def read_event(self, at: float, block: bytes, text: str) -> str:
        """Take one SSE event in; return the content text not yet read as markers."""
        lines = block.decode().split("\n")
        data = "\n".join(line[5:].removeprefix(" ") for line in lines if line[:5] == "data:")
        if not data:
            return text  # a comment (keep-alive)
        if data == "[DONE]":
            self.done = True
            return text
        event: dict[str, Any] = json.loads(data)
        if event.get("error"):
            self.error = json.dumps(event["error"])[:300]
        self.usage = self.usage or bool(event.get("usage"))
        for choice in event.get("choices") or []:
            self.finish = choice.get("finish_reason") or self.finish
            content = (choice.get("delta") or {}).get("content")
            if not content:
                continue
            # Deltas may arrive merged or split: read whole markers, keep any partial tail.
            text += content
            end = 0
            for found in MARKER.finditer(text):
                stamp, lag = int(found[2]) / 1e6, int(found[3]) / 1e6
                self.tokens.append((at, int(found[1]), stamp, lag))
                end = found.end()
            text = text[end:]
            if self.tokens and math.isnan(self.first):
                self.first = self.tokens[0][0]
        return text


class HttpxClient:
    """``httpx`` with one kept-alive connection: the transport of the official SDKs."""

    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {key}"},
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=httpx.Timeout(120.0),
            verify=_SSL,
        )

    async def open(self, probe: str) -> None:
        (await self.http.get(probe)).raise_for_status()

    async def post(self, body: dict[str, Any], reply: Reply) -> None:
        """Send one streaming request and read its events into ``reply`` to the end."""
        reply.sent = time.monotonic()
        try:
            async with self.http.stream("POST", PATH, json=body) as response:
                reply.headers = time.monotonic()
                reply.status = response.status_code
                if response.status_code != 200:
                    reply.error = (await response.aread()).decode(errors="replace")[:300]
                    return
                pending, text = b"", ""
                async for chunk in response.aiter_raw():
                    at = time.monotonic()  # first: parsing is client cost, not the path's
                    *blocks, pending = _EVENT_END.split(pending + chunk)
                    for block in blocks:
                        text = reply.read_event(at, block, text)
        except (httpx.HTTPError, ValueError) as error:
            reply.error = repr(error)[:300]

    async def aclose(self) -> None:
        await self.http.aclose()


class RawClient:
    """One kept-alive HTTP/1.1 connection speaking just enough to stream a completion.

    The default load generator: at 100 streams x 50 deltas/s it shares the machine's two
    cores with the servers it measures, and ``httpx`` spent about three times its CPU per
    event there (56 % of a core against 19 %; ``--client httpx`` compares).
    """

    def __init__(self, base_url: str, key: str) -> None:
        self.port = int(base_url.rsplit(":", 1)[1])
        self.key = key
        self.at = 0.0  # when the last read returned
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self, probe: str) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, body: dict[str, Any], reply: Reply) -> None:
        """Send one streaming request and read its events into ``reply`` to the end."""
        assert self.writer is not None
        payload = json.dumps(body).encode()
        head = (
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Authorization: Bearer {self.key}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        reply.sent = time.monotonic()
        try:
            self.writer.write(head.encode() + payload)
            await self._response(reply)
        except (OSError, ValueError) as error:
            reply.error = repr(error)[:300]

    async def _more(self, buffer: bytes) -> bytes:
        assert self.reader is not None
        data = await self.reader.read(65536)
        self.at = time.monotonic()  # first: parsing is client cost, not the path's
        if not data:
            raise ConnectionError("the server closed the connection mid-response")
        return buffer + data

    async def _response(self, reply: Reply) -> None:
        buffer = b""
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            buffer = await self._more(buffer)
        reply.headers = self.at
        status_line, *lines = buffer[:end].decode("latin-1").split("\r\n")
        buffer = buffer[end + 4 :]
        reply.status = int(status_line.split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
        if "chunked" not in headers.get("transfer-encoding", "").lower():
            length = int(headers.get("content-length", "0"))
            while len(buffer) < length:
                buffer = await self._more(buffer)
            reply.error = "" if reply.status == 200 else buffer.decode(errors="replace")[:300]
            return
        pending, text, failed = b"", "", b""
        while True:  # one chunk of the body: its size line, its data, CRLF
            while (line := buffer.find(b"\r\n")) < 0:
                buffer = await self._more(buffer)
            size = int(buffer[:line].split(b";")[0], 16)
            while len(buffer) < line + size + 4:
                buffer = await self._more(buffer)
            data, buffer = buffer[line + 2 : line + 2 + size], buffer[line + size + 4 :]
            if not size:
                break  # the last chunk (no trailers: neither server sends any)
            if reply.status != 200:
                failed += data
                continue
            *blocks, pending = _EVENT_END.split(pending + data)
            for block in blocks:
                text = reply.read_event(self.at, block, text)
        if failed:
            reply.error = failed.decode(errors="replace")[:300]

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()


type Client = HttpxClient | RawClient
CLIENTS: dict[str, type[HttpxClient] | type[RawClient]] = {"raw": RawClient, "httpx": HttpxClient}
