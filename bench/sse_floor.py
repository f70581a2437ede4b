"""ASGI entry for the SSE benchmark's durable floor: the least a durable run over SSE needs.

``daphne bench.sse_floor:application`` answers ``POST /api/conversations/<id>/messages/`` by
itself, in raw ASGI on the event loop: the API key checked (``ApiKey.objects.find``, the app's
one fixed statement) and, in the same database-thread hop, one transaction storing the user
message and a ``Run`` row (``bench.relay_floor.open_run``); then the stamping model's deltas
straight to the response as SSE events (``id:`` the frame's ``seq``), and at the end one
transaction storing the answer and settling the run (``settle_run``) before ``finish``. Every
other request is the Django app (``/healthz``, which the load generator opens a connection
with). No middleware, throttle, serializer, run manager, frame log or heartbeat. Never import
this module from the app.
"""

from __future__ import annotations

import gc
import json
import os
import re
import uuid
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
django_asgi_app = get_asgi_application()

from agents.models import ApiKey  # noqa: E402
from bench.relay_floor import MODEL, SIGNAL, open_run_here, settle_run  # noqa: E402
from orkestrel.core import ContentDelta, ProviderResult  # noqa: E402
from orkestrel.core import Message as KitMessage  # noqa: E402
from orkestrel.db import in_thread  # noqa: E402

__all__ = ["application"]

ROUTE = re.compile(r"^/api/conversations/([0-9a-f-]{36})/messages/$")
ENCODE = json.JSONEncoder(ensure_ascii=False).encode
HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


@in_thread
def begin(raw_key: str, conversation_id: str, message_id: str, text: str) -> tuple[int, int] | None:
    """The key checked and the run opened in one hop: ``(user id, run id)``, or ``None`` when
    refused (nothing stored)."""
    key = ApiKey.objects.find(raw_key)
    if key is None:
        return None
    run = open_run_here(key.user_id, conversation_id, message_id, text)
    return None if run is None else (key.user_id, run)


def event(frame: dict[str, Any]) -> bytes:
    return f"id: {frame['seq']}\nevent: {frame['type']}\ndata: {ENCODE(frame)}\n\n".encode()


async def refuse(send: Any, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def application(scope: Any, receive: Any, send: Any) -> None:
    """The floor's route, else the Django app."""
    match = ROUTE.match(scope.get("path", "")) if scope["type"] == "http" else None
    if match is None or scope["method"] != "POST":
        await django_asgi_app(scope, receive, send)
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = dict(scope["headers"])
    words = headers.get(b"authorization", b"").decode("latin-1").split()
    content = json.loads(body or b"{}").get("content")
    if len(words) != 2 or not isinstance(content, str):
        await refuse(send, 400)
        return
    message_id, conversation_id = uuid.uuid4().hex, match.group(1)
    begun = await begin(words[1], conversation_id, message_id, content)
    if begun is None:
        await refuse(send, 404)
        return
    user_id, run = begun
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    seq = 1
    user = {"id": message_id, "role": "user", "content": content}
    first = {"type": "started", "run": run, "seq": seq, "message": user}
    await send({"type": "http.response.body", "body": event(first), "more_body": True})
    result = ProviderResult("")
    async for item in MODEL.stream([KitMessage(message_id, "user", content)], SIGNAL):
        if isinstance(item, ContentDelta):
            seq += 1
            token = {"type": "token", "run": run, "seq": seq, "content": item.text}
            await send({"type": "http.response.body", "body": event(token), "more_body": True})
        elif isinstance(item, ProviderResult):
            result = item
    await settle_run(user_id, conversation_id, run, result.content)
    finish = {"type": "finish", "run": run, "seq": seq + 1, "result": {"content": result.content}}
    await send({"type": "http.response.body", "body": event(finish), "more_body": False})


gc.freeze()
