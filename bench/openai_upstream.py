"""A fake OpenAI-compatible model server that streams stamped deltas on an absolute schedule.

``POST /v1/chat/completions`` with ``stream: true`` answers as OpenAI does: a role chunk,
``count`` ``chat.completion.chunk`` content deltas, a ``finish_reason: "stop"`` chunk, the usage
chunk when ``stream_options.include_usage`` asks for it, and ``data: [DONE]``. Delta ``i`` is
due at ``start + i * interval`` (``start``: the request was read), so a late delta never
slows the rate; its text is ``[i:stamp:lag]``, with ``stamp`` the server's
``time.monotonic()`` in µs just before the write and ``lag`` how late that was (µs). Linux
processes share that clock, so a client's ``receive time - stamp`` is the path's latency.

``count`` and ``interval`` come from the last user message, ``stream <count> <interval>``
(e.g. ``stream 100 0.02``), so they survive any server in between; otherwise the command
line's defaults apply. ``GET /v1/models`` lists one model. Without ``stream`` the whole
answer comes at once as a ``chat.completion``.

A raw asyncio HTTP/1.1 server (keep-alive, chunked responses) rather than a framework: the
stamp is taken immediately before the socket write, with no framework between them.

Run: ``.venv/bin/python bench/openai_upstream.py [--port 0]``; prints ``LISTENING <port>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from typing import Any

__all__ = ["MARKER", "main", "marker"]

MARKER = re.compile(r"\[(\d+):(\d+):(\d+)\]")  # one delta's text: [index:stamp_us:lag_us]
COMMAND = re.compile(r"\bstream (\d+) (\d*\.?\d+)\b")
MODEL = "bench"
_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 411: "Length Required"}


def marker(index: int, stamp_us: int, lag_us: int) -> str:
    """The text of delta ``index``: what ``MARKER`` reads back."""
    return f"[{index}:{stamp_us}:{lag_us}]"


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _chunk(data: bytes) -> bytes:
    """One piece of a ``Transfer-Encoding: chunked`` body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(payload: str) -> bytes:
    return _chunk(f"data: {payload}\n\n".encode())


async def _respond(writer: asyncio.StreamWriter, status: int, body: object) -> None:
    data = _dumps(body).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    writer.write(head.encode() + data)
    await writer.drain()


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None}}


async def _read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, str, dict[str, str], bytes] | None:
    """``(method, path, headers, body)`` of the next request, or ``None`` at a clean EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise
        return None
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append(await reader.readexactly(size + 2))
        await reader.readuntil(b"\r\n")  # the (empty) trailer
        body = b"".join(part[:-2] for part in parts)
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, target.split("?", 1)[0], headers, body


def _shape(request: dict[str, Any], defaults: argparse.Namespace) -> tuple[int, float]:
    """``(count, interval)`` from the last user message's ``stream <count> <interval>``."""
    for message in reversed(request.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        found = COMMAND.search(content) if isinstance(content, str) else None
        if found:
            return int(found[1]), float(found[2])
        break
    return defaults.tokens, defaults.interval


class Upstream:
    """The server: one coroutine per connection, requests on it one after the other."""

    def __init__(self, defaults: argparse.Namespace) -> None:
        self.defaults = defaults
        self.served = 0

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await _read_request(reader)) is not None:
                method, path, headers, body = request
                await self.route(writer, method, path, body)
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away mid-request or mid-stream: nothing to answer
        finally:
            writer.close()

    async def route(
        self, writer: asyncio.StreamWriter, method: str, path: str, body: bytes
    ) -> None:
        path = path.rstrip("/")
        if method == "GET" and path == "/v1/models":
            model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "bench"}
            await _respond(writer, 200, {"object": "list", "data": [model]})
        elif method == "POST" and path == "/v1/chat/completions":
            try:
                request = json.loads(body)
            except ValueError:
                await _respond(writer, 400, _error("the body is not JSON"))
                return
            if not isinstance(request, dict):
                await _respond(writer, 400, _error("the body is not a JSON object"))
                return
            await self.completion(writer, request)
        else:
            await _respond(writer, 404, _error(f"no route {method} {path}"))

    async def completion(self, writer: asyncio.StreamWriter, request: dict[str, Any]) -> None:
        start = time.monotonic()
        count, interval = _shape(request, self.defaults)
        self.served += 1
        ident = f"chatcmpl-bench{self.served}"
        model = request.get("model") if isinstance(request.get("model"), str) else MODEL
        head = {"id": ident, "object": "chat.completion.chunk", "created": int(time.time())}
        head["model"] = model
        usage = {"prompt_tokens": 8, "completion_tokens": count, "total_tokens": count + 8}
        if not request.get("stream"):
            now = time.monotonic_ns() // 1000
            text = "".join(marker(i, now, 0) for i in range(count))
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            answer = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            await _respond(writer, 200, answer)
            return
        # Every content chunk is this text around its marker: built once, not per delta.
        before, after = _dumps(
            {**head, "choices": [{"index": 0, "delta": {"content": "\0"}, "finish_reason": None}]}
        ).split("\\u0000")
        role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
        writer.write(_SSE_HEAD + _event(_dumps({**head, "choices": [role]})))
        for index in range(count):
            due = start + index * interval
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if writer.is_closing():
                return
            stamp = time.monotonic_ns() // 1000
            lag = max(0, stamp - round(due * 1e6))
            writer.write(_event(before + marker(index, stamp, lag) + after))
            await writer.drain()
        stop = {"index": 0, "delta": {}, "finish_reason": "stop"}
        tail = [_event(_dumps({**head, "choices": [stop]}))]
        options = request.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            tail.append(_event(_dumps({**head, "choices": [], "usage": usage})))
        tail += [_event("[DONE]"), b"0\r\n\r\n"]
        writer.write(b"".join(tail))
        await writer.drain()


async def serve(args: argparse.Namespace) -> None:
    upstream = Upstream(args)
    # A deep backlog: a hundred clients connect at once.
    server = await asyncio.start_server(upstream.connection, args.host, args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--tokens", type=int, default=100, help="deltas when not asked")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between deltas")
    try:
        asyncio.run(serve(parser.parse_args()))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
