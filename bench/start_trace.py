"""A what-if for diagnosis (``bench/relay.py --start-trace FILE``): where each run start waits.

Loaded by ``bench/relay_app.py`` when ``RELAY_START_TRACE`` names a file. It wraps, in the
server process only, the steps of a websocket ``send`` that starts a run: the consumer's
``on_send`` (on the loop), the double-submit read (``read_submission``: a hop of its own, or
inside the start's or the REST view's) and the start's transaction (``manager._checked``) on
the database thread (wall and that thread's CPU), and the session build
(``ChatSession.from_loaded``) on the loop; ``ActiveRun.started`` marks the ``started`` frame;
every sync hop of the process is counted by the function it ran (count, wall, that thread's
CPU). At exit it writes one JSON record per start and the hops, which ``bench/relay.py``
summarises (``bench/start_steps.py``). Never import this module from the app.
"""

from __future__ import annotations

import atexit
import contextvars
import json
import time
from collections.abc import Callable
from functools import partial, wraps
from typing import Any

from asgiref.sync import SyncToAsync

from agents.api import conversations as _api_conversations
from agents.api.conversations import ConversationViewSet
from agents.api.dispatch import Deferred
from agents.consumers import ChatConsumer
from agents.runs import manager as _manager
from agents.runs import service as _service
from agents.runs import submissions as _submissions
from agents.runs.active import ActiveRun
from agents.runtime.session import ChatSession

__all__ = ["http", "install"]

Record = dict[str, Any]
_current: contextvars.ContextVar[Record | None] = contextvars.ContextVar("start", default=None)
RECORDS: list[Record] = []
# Every sync hop of the process by the function it ran: [count, wall seconds, thread CPU].
HOPS: dict[str, list[float]] = {}


def _name(func: Any) -> str:
    while True:
        if isinstance(func, partial):
            # ``orkestrel.db`` hops are ``partial(_tidied, function)``: name the function.
            func = func.args[0] if func.func.__name__ == "_tidied" else func.func
        else:
            return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)}"


def _census(handler: Callable[..., Any]) -> Callable[..., Any]:
    def counted(
        self: Any, loop: Any, exc_info: Any, context: Any, func: Any, *a: Any, **k: Any
    ) -> Any:
        began, cpu = time.monotonic(), time.thread_time()
        try:
            return handler(self, loop, exc_info, context, func, *a, **k)
        finally:
            entry = HOPS.setdefault(_name(getattr(self, "func", func)), [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += time.monotonic() - began
            entry[2] += time.thread_time() - cpu

    return counted


def _on_thread(original: Callable[..., Any], key: str) -> Callable[..., Any]:
    @wraps(original)  # a DRF action keeps its routing attributes
    def timed(*args: Any, **kwargs: Any) -> Any:
        record = _current.get()
        began, cpu = time.monotonic(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            if record is not None:
                record[key] = (began, time.monotonic(), time.thread_time() - cpu)

    return timed


def install(path: str) -> None:
    """Wrap the start's steps; write the records to ``path`` at exit."""
    on_send = ChatConsumer.on_send

    async def traced_send(self: ChatConsumer, frame: Any) -> None:
        record: Record = {"send": time.monotonic()}
        RECORDS.append(record)
        token = _current.set(record)
        try:
            await on_send(self, frame)
        finally:
            record["sent"] = time.monotonic()
            _current.reset(token)

    from_loaded = ChatSession.from_loaded.__func__  # type: ignore[attr-defined]

    async def traced_session(cls: type[ChatSession], *args: Any, **kwargs: Any) -> Any:
        record, began = _current.get(), time.monotonic()
        try:
            return await from_loaded(cls, *args, **kwargs)
        finally:
            if record is not None:
                record["session"] = (began, time.monotonic())

    started = ActiveRun.started

    def traced_started(self: ActiveRun, *args: Any, **kwargs: Any) -> None:
        record = _current.get()
        if record is not None:
            record["started"] = time.monotonic()
        started(self, *args, **kwargs)

    ChatConsumer.on_send = traced_send  # type: ignore[method-assign]
    ChatSession.from_loaded = classmethod(traced_session)  # type: ignore[method-assign,assignment]
    ActiveRun.started = traced_started  # type: ignore[method-assign]
    SyncToAsync.thread_handler = _census(SyncToAsync.thread_handler)  # type: ignore[method-assign]
    # The read as a hop of its own, inside the start's hop, inside the REST view's.
    _service.read_submission = _on_thread(_service.read_submission, "read")  # type: ignore[attr-defined]
    _submissions.read_submission = _on_thread(_submissions.read_submission, "read")  # type: ignore[attr-defined]
    _api_conversations.read_submission = _on_thread(_api_conversations.read_submission, "read")  # type: ignore[attr-defined]
    _manager._checked = _on_thread(_manager._checked, "checked")  # type: ignore[attr-defined]
    ConversationViewSet.messages = _on_thread(ConversationViewSet.messages, "view")  # type: ignore[method-assign]
    Deferred._respond = _on_thread(Deferred._respond, "respond")  # type: ignore[method-assign]

    def write() -> None:
        with open(path, "w") as out:
            json.dump({"starts": RECORDS, "hops": HOPS}, out)

    atexit.register(write)


def http(app: Callable[..., Any]) -> Callable[..., Any]:
    """``app`` with each ``POST …/messages/`` traced as a start: its arrival, the response's
    headers and its first body chunk (the view and the answer are timed by ``install``)."""

    async def traced(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        if not scope["path"].endswith("/messages/"):
            await app(scope, receive, send)
            return
        record: Record = {"send": time.monotonic()}
        RECORDS.append(record)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                record["headers"] = time.monotonic()
            elif message["type"] == "http.response.body" and "body" not in record:
                record["body"] = time.monotonic()
            await send(message)

        token = _current.set(record)
        try:
            await app(scope, receive, sending)
        finally:
            _current.reset(token)

    return traced
