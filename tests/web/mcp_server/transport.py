"""An in-process HTTP transport for the MCP SDK's client that streams the app's responses.

httpx's ``ASGITransport`` hands the client a response only once the app has finished it. A
``tools/call`` on an earlier MCP revision sends the client an ``elicitation/create`` request
on the call's own event stream and waits for the answer: with that transport the client never
sees the request and both wait forever. Here the app runs in a task of its own and each body
chunk reaches the client as it is sent, as over a socket; a closed response tells the app its
client went away.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx2

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
App = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Any]

# How long an app may take to finish after its client went away before it is cancelled.
CLOSE_SECONDS = 5.0


class StreamingASGITransport(httpx2.AsyncBaseTransport):
    """Requests to ``app`` in process; the response's body streams as the app sends it."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, httpx2.AsyncByteStream)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(key.lower(), value) for key, value in request.headers.raw],
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "server": (request.url.host, request.url.port),
            "client": ("127.0.0.1", 123),
            "root_path": "",
        }
        chunks = request.stream.__aiter__()
        sent_all = False
        gone = asyncio.Event()
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        body: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def receive() -> Message:
            nonlocal sent_all
            if sent_all:
                await gone.wait()
                return {"type": "http.disconnect"}
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                sent_all = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.request", "body": chunk, "more_body": True}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.set_result((message["status"], list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                if message.get("body") and request.method != "HEAD":
                    body.put_nowait(message["body"])
                if not message.get("more_body", False):
                    body.put_nowait(None)

        async def serve() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception as error:
                if not started.done():
                    started.set_exception(error)
            finally:
                if not started.done():
                    started.set_exception(RuntimeError("the app sent no response"))
                body.put_nowait(None)

        task = asyncio.create_task(serve())
        try:
            status, headers = await started
        except BaseException:
            gone.set()
            await _ended(task)
            raise
        return httpx2.Response(status, headers=headers, stream=_Body(body, gone, task))


class _Body(httpx2.AsyncByteStream):
    def __init__(
        self, chunks: asyncio.Queue[bytes | None], gone: asyncio.Event, task: asyncio.Task[None]
    ) -> None:
        self._chunks = chunks
        self._gone = gone
        self._task = task

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await self._chunks.get()) is not None:
            yield chunk

    async def aclose(self) -> None:
        self._gone.set()
        await _ended(self._task)


async def _ended(task: asyncio.Task[None]) -> None:
    """Let the app finish (it was told its client went away); cancel it if it does not."""
    done, _ = await asyncio.wait({task}, timeout=CLOSE_SECONDS)
    if not done:
        task.cancel()
        await asyncio.wait({task}, timeout=CLOSE_SECONDS)
