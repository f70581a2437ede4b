"""The HTTP door's own checks, before Django reads a byte of the body: its size and its URL.

- **Size.** Django reads a whole body before it calls a view (spooled to a temporary file
  past 2.5 MB), so a view's ``413`` came after the body had been read and written to disk, and
  a request declaring a 10 GiB body was waited for. Here a ``Content-Length`` over
  ``ORKESTREL["MAX_REQUEST_BYTES"]`` is answered ``413`` at once, unread; a body without one
  (chunked) is counted as it arrives and answered ``413`` as soon as it passes the limit. Django
  is then told the client went away, and answers nothing itself.
- **URL text.** A path or a query parameter holding text PostgreSQL cannot hold
  (``orkestrel.storable``: ``%00`` decodes to NUL) is answered ``400``: every view's lookups
  (a workspace path, a search, a response id, a model) are behind this one check.

Answers are JSON in the shape of the door asked: OpenAI's under ``/v1/``
(``agents.openai.errors``), the API's (``agents.api.errors``) everywhere else.

Under plain Daphne the server itself (Twisted's ``Request``) buffers a whole body, past 100 kB
in a temporary file, before any application sees it; the server ``make run`` starts
(``orkestrel.server``) refuses it there already, with these answers. Under another ASGI server
(uvicorn, hypercorn) this gate is the one that refuses as bytes arrive.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote_plus

from django.conf import settings

from .problems import PROBLEM, problem
from .storable import problem as text_problem

__all__ = ["RequestGate", "refusal", "too_large", "too_large_message"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Application = Callable[[Any, Receive, Send], Awaitable[None]]


def too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit} bytes."


def refusal(path: str, status: int, message: str, code: str) -> tuple[bytes, str]:
    """An error's JSON, and its content type, in the shape the door at ``path`` answers in:
    OpenAI's under ``/v1/``, the API's problem details everywhere else."""
    if path.startswith("/v1/"):
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
        return json.dumps({"error": error}).encode(), "application/json"
    return json.dumps(problem(status, message, code)).encode(), PROBLEM


def _url_fault(scope: MutableMapping[str, Any]) -> str | None:
    found = text_problem(scope.get("path", ""))
    if found is not None:
        return f"The URL's path holds {found}."
    raw = scope.get("query_string", b"")
    # Django decodes a query string so: invalid UTF-8 becomes U+FFFD, never a surrogate.
    query = unquote_plus(raw.decode("latin-1"), errors="replace") if raw else ""
    found = text_problem(query)
    if found is not None:
        return f"The URL's query string holds {found}."
    return None


def _declared_length(scope: MutableMapping[str, Any]) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _answer(send: Send, status: int, answer: tuple[bytes, str]) -> None:
    body, content_type = answer
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if status == 413:
        # The unread rest of the body is still on the connection: it cannot carry another.
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestGate:
    """ASGI middleware for HTTP: a body over the limit, or a URL holding unstorable text, is
    refused before the application reads the body."""

    def __init__(self, app: Application) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        fault = _url_fault(scope)
        if fault is not None:
            await _answer(send, 400, refusal(path, 400, fault, "invalid_text"))
            return
        # Read for each request: a test may change it with ``override_settings``.
        limit: int = settings.ORKESTREL["MAX_REQUEST_BYTES"]
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _answer(send, 413, too_large(path, limit))
            return
        read = 0
        refused = False

        async def counted() -> Message:
            nonlocal read, refused
            message = await receive()
            if refused or message["type"] != "http.request":
                return message
            read += len(message.get("body", b""))
            if read <= limit:
                return message
            refused = True
            await _answer(send, 413, too_large(path, limit))
            # Django stops reading and answers nothing on a disconnect.
            return {"type": "http.disconnect"}

        async def guarded(message: Message) -> None:
            # After the gate's own answer the application's would be a second one.
            if not refused:
                await send(message)

        await self.app(scope, counted, guarded)


def too_large(path: str, limit: int) -> tuple[bytes, str]:
    """The ``413`` of a body over ``limit`` bytes sent to ``path``, and its content type."""
    code = "request_too_large" if path.startswith("/v1/") else "too_large"
    return refusal(path, 413, too_large_message(limit), code)
