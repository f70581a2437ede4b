"""ASGI entry for the relay benchmark's floor: a bare Channels consumer, no run machinery.

``daphne bench.relay_floor:application`` is what any websocket chat on this stack pays at the
least, served by Daphne exactly as ``bench/relay_app.py`` is: HTTP is the Django app (the login
form and ``/healthz`` the load generator uses), the socket ``ws/conversations/<id>/`` is
``FloorConsumer``. It speaks the frames the load generator reads and nothing more:

- connect: the user from the session cookie (the app's own ``agents.socket_auth`` stack, the
  least a socket on this stack pays; an anonymous socket is closed with 4401), then a bare
  ``state`` frame;
- ``send``: the user message stored in one SQL statement on the database thread (an
  ``INSERT ... SELECT`` that also checks the conversation is the user's), then ``started``;
  every delta of the stamping model (``bench/floor_model.py``, the same one the app's
  ``scripted`` endpoint serves) goes straight to the socket as its own ``token`` frame, and
  the answer ends with ``finish`` carrying the assembled text.

No run manager, no checkpoints or settle, no relay or pacing, no agent, no origin check, no
frame validation beyond what the reply needs. Never import this module from the app.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import uuid
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
django_asgi_app = get_asgi_application()

from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.db import connection  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils import timezone  # noqa: E402

from agents.socket_auth import socket_auth_stack  # noqa: E402
from bench.floor_model import StampedProvider  # noqa: E402
from conversations.models import Conversation, Message  # noqa: E402
from orkestrel.core import AbortSignal, ContentDelta, ProviderResult  # noqa: E402
from orkestrel.core import Message as KitMessage  # noqa: E402
from orkestrel.db import in_thread  # noqa: E402

__all__ = ["FloorConsumer", "application"]

MODEL = StampedProvider(None, "floor")
RUNS = itertools.count(1)  # run ids: unique in this process, which is all a socket needs
ENCODE = json.JSONEncoder(ensure_ascii=False).encode
SIGNAL = AbortSignal()  # never fired: a run ends when its socket's task is cancelled


def _insert_sql() -> str:
    message, conversation = Message._meta, Conversation._meta
    columns = {
        name: message.get_field(name).column
        for name in (
            "conversation",
            "message_id",
            "position",
            "role",
            "content",
            "tool_call_id",
            "thinking",
            "hidden",
        )
    }
    columns["created"] = message.get_field("created").column
    quote = connection.ops.quote_name
    table, owner = quote(message.db_table), quote(conversation.get_field("owner").column)
    names = ", ".join(quote(column) for column in columns.values())
    of = quote(columns["conversation"])
    # One statement: the next position, the owner check and the row. ``c.id`` is the
    # conversation's primary key column, ``id`` in both backends.
    return (
        f"INSERT INTO {table} ({names}) "
        f"SELECT c.id, %s, COALESCE((SELECT MAX(m.{quote(columns['position'])}) FROM {table} m "
        f"WHERE m.{of} = c.id), -1) + 1, 'user', %s, '', '', %s, %s "
        f"FROM {quote(conversation.db_table)} c WHERE c.id = %s AND c.{owner} = %s"
    )


INSERT = _insert_sql()


@in_thread
def store_user_message(user_id: int, conversation_id: str, message_id: str, text: str) -> bool:
    """Store the user message in one SQL statement; ``False`` unless the conversation is the
    user's."""
    key = Conversation._meta.pk.get_db_prep_value(uuid.UUID(conversation_id), connection)
    created = Message._meta.get_field("created").get_db_prep_value(timezone.now(), connection)
    with connection.cursor() as cursor:
        cursor.execute(INSERT, [message_id, text, False, created, key, user_id])
        return cursor.rowcount == 1


class FloorConsumer(AsyncWebsocketConsumer):
    """One socket on one conversation: the stamping model's deltas straight to the socket."""

    async def connect(self) -> None:
        self.task: asyncio.Task[None] | None = None
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user_id = user.id
        self.conversation_id = str(self.scope["url_route"]["kwargs"]["conversation_id"])
        await self.send_frame(
            {"type": "state", "conversation": {"id": self.conversation_id}, "run": None}
        )

    async def disconnect(self, code: int) -> None:
        if getattr(self, "task", None) is not None and not self.task.done():
            self.task.cancel()

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=ENCODE(frame))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            frame = json.loads(text_data or "")
        except ValueError:
            frame = None
        send = isinstance(frame, dict) and frame.get("type") == "send"
        if not send or not isinstance(frame.get("content"), str):
            await self.send_frame({"type": "error", "code": "invalid", "message": "not a send"})
        elif self.task is not None and not self.task.done():
            await self.send_frame({"type": "error", "code": "busy", "message": "answering"})
        else:
            # A task, like the app's runs: the consumer keeps reading its socket meanwhile.
            self.task = asyncio.create_task(self.answer(frame["content"], frame.get("nonce")))

    async def answer(self, content: str, nonce: str | None) -> None:
        message_id = uuid.uuid4().hex
        if not await store_user_message(self.user_id, self.conversation_id, message_id, content):
            await self.send_frame({"type": "error", "code": "forbidden", "message": "not yours"})
            return
        run, seq = next(RUNS), 1
        message = {"id": message_id, "role": "user", "content": content}
        await self.send_frame(
            {"type": "started", "run": run, "seq": seq, "message": message, "nonce": nonce}
        )
        result = ProviderResult("")
        try:
            async for item in MODEL.stream([KitMessage(message_id, "user", content)], SIGNAL):
                if isinstance(item, ContentDelta):
                    seq += 1
                    await self.send_frame(
                        {"type": "token", "run": run, "seq": seq, "content": item.text}
                    )
                elif isinstance(item, ProviderResult):
                    result = item
        except ValueError as error:  # not a relay command: the floor has no other model
            await self.send_frame(
                {"type": "error", "run": run, "code": "invalid", "message": str(error)}
            )
            return
        await self.send_frame(
            {"type": "finish", "run": run, "seq": seq + 1, "result": {"content": result.content}}
        )


application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": socket_auth_stack(
            URLRouter([path("ws/conversations/<uuid:conversation_id>/", FloorConsumer.as_asgi())])
        ),
    }
)

# As ``orkestrel.asgi``: what is loaded lives as long as the process, out of the collector's way.
gc.freeze()
