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

``durable_application`` (``DurableFloorConsumer``) is the least a *durable* run needs on this
stack: per start one transaction storing the user message and a ``Run`` row (``running``), per
end one transaction storing the answer and settling the run (``done``), each on the database
thread in fixed SQL; the frames in between go straight to the socket as above.
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
from django.db import connection, transaction  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils import timezone  # noqa: E402

from agents.socket_auth import socket_auth_stack  # noqa: E402
from bench.floor_model import StampedProvider  # noqa: E402
from conversations.models import Conversation, Message, Run  # noqa: E402
from orkestrel.core import AbortSignal, ContentDelta, ProviderResult  # noqa: E402
from orkestrel.core import Message as KitMessage  # noqa: E402
from orkestrel.db import in_thread  # noqa: E402

__all__ = ["DurableFloorConsumer", "FloorConsumer", "application", "durable_application"]

MODEL = StampedProvider(None, "floor")
RUNS = itertools.count(1)  # run ids: unique in this process, which is all a socket needs
ENCODE = json.JSONEncoder(ensure_ascii=False).encode
SIGNAL = AbortSignal()  # never fired: a run ends when its socket's task is cancelled


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _insert_sql(role: str = "user") -> str:
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
    # Any other column a blank message needs (the model grows): its default, as a literal.
    rest = {
        field.column: _literal(field.get_db_prep_save(field.get_default(), connection))
        for field in message.concrete_fields
        if field.column not in columns.values() and not field.primary_key and not field.null
    }
    table, owner = quote(message.db_table), quote(conversation.get_field("owner").column)
    names = ", ".join(quote(column) for column in [*columns.values(), *rest])
    of = quote(columns["conversation"])
    # One statement: the next position, the owner check and the row. ``c.id`` is the
    # conversation's primary key column, ``id`` in both backends.
    return (
        f"INSERT INTO {table} ({names}) "
        f"SELECT c.id, %s, COALESCE((SELECT MAX(m.{quote(columns['position'])}) FROM {table} m "
        f"WHERE m.{of} = c.id), -1) + 1, '{role}', %s, '', '', %s, %s"
        + "".join(f", {value}" for value in rest.values())
        + " "
        f"FROM {quote(conversation.db_table)} c WHERE c.id = %s AND c.{owner} = %s"
    )


INSERT = _insert_sql()
INSERT_ANSWER = _insert_sql("assistant")


def _run_sql() -> tuple[str, str]:
    run = Run._meta
    quote = connection.ops.quote_name
    column = {field.name: quote(field.column) for field in run.concrete_fields}
    blank = ("stop_reason", "model", "response_model", "content", "thinking", "error", "holder")
    zero = [name for name in column if name.startswith("usage_")]
    names = ["conversation", "status", "events", "created", "started", *blank, *zero]
    values = ["%s", "'running'", "'[]'", "%s", "%s", *("''" for _ in blank), *("0" for _ in zero)]
    for field in run.concrete_fields:  # any column the model grew: its default, as a literal
        if field.name not in names and not field.primary_key and not field.null:
            names.append(field.name)
            values.append(_literal(field.get_db_prep_save(field.get_default(), connection)))
    insert = (
        f"INSERT INTO {quote(run.db_table)} ({', '.join(column[name] for name in names)}) "
        f"VALUES ({', '.join(values)}) RETURNING {column['id']}"
    )
    settle = (
        f"UPDATE {quote(run.db_table)} SET {column['status']} = 'done', "
        f"{column['content']} = %s, {column['finished']} = %s WHERE {column['id']} = %s"
    )
    return insert, settle


INSERT_RUN, SETTLE_RUN = _run_sql()


def _now() -> Any:
    return Run._meta.get_field("created").get_db_prep_value(timezone.now(), connection)


def open_run_here(user_id: int, conversation_id: str, message_id: str, text: str) -> int | None:
    """One transaction: the user message and a running ``Run`` row; ``None`` unless the
    conversation is the user's (then nothing is stored)."""
    key = Conversation._meta.pk.get_db_prep_value(uuid.UUID(conversation_id), connection)
    now = _now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(INSERT, [message_id, text, False, now, key, user_id])
        if cursor.rowcount != 1:
            return None
        cursor.execute(INSERT_RUN, [key, now, now])
        return int(cursor.fetchone()[0])


def settle_run_here(user_id: int, conversation_id: str, run_id: int, answer: str) -> None:
    """One transaction: the answer stored and the run settled."""
    key = Conversation._meta.pk.get_db_prep_value(uuid.UUID(conversation_id), connection)
    now = _now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(INSERT_ANSWER, [uuid.uuid4().hex, answer, False, now, key, user_id])
        cursor.execute(SETTLE_RUN, [answer, now, run_id])


# The same, as coroutines run on the database thread.
open_run = in_thread(open_run_here)
settle_run = in_thread(settle_run_here)


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

    async def begin(self, message_id: str, content: str) -> int | None:
        """Store what a start needs; the run's id, or ``None`` when refused."""
        stored = await store_user_message(self.user_id, self.conversation_id, message_id, content)
        return next(RUNS) if stored else None

    async def end(self, run: int, answer: str) -> None:
        """Store what an end needs (the bare floor: nothing)."""

    async def answer(self, content: str, nonce: str | None) -> None:
        message_id = uuid.uuid4().hex
        run = await self.begin(message_id, content)
        if run is None:
            await self.send_frame({"type": "error", "code": "forbidden", "message": "not yours"})
            return
        seq = 1
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
        await self.end(run, result.content)
        await self.send_frame(
            {"type": "finish", "run": run, "seq": seq + 1, "result": {"content": result.content}}
        )


class DurableFloorConsumer(FloorConsumer):
    """The floor with a durable run: a transaction at its start and one at its end."""

    async def begin(self, message_id: str, content: str) -> int | None:
        return await open_run(self.user_id, self.conversation_id, message_id, content)

    async def end(self, run: int, answer: str) -> None:
        await settle_run(self.user_id, self.conversation_id, run, answer)


application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": socket_auth_stack(
            URLRouter([path("ws/conversations/<uuid:conversation_id>/", FloorConsumer.as_asgi())])
        ),
    }
)

durable_application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": socket_auth_stack(
            URLRouter(
                [
                    path(
                        "ws/conversations/<uuid:conversation_id>/",
                        DurableFloorConsumer.as_asgi(),
                    )
                ]
            )
        ),
    }
)

# As ``orkestrel.asgi``: what is loaded lives as long as the process, out of the collector's way.
gc.freeze()
