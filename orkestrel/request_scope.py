"""What belongs to the HTTP request being handled, wherever its work runs: its id and the
headers its response will carry; and the filter that names the request (and run) in log lines.

``orkestrel.middleware.RequestScopeMiddleware`` opens a ``RequestScope`` per request in a
context variable: a client's well-formed ``X-Request-ID`` is kept, else a new id is made, and
the response carries it. asgiref copies the context into every thread hop (a sync view, the
database thread), and the scope is one mutable object, so headers added deep inside a view
(the API throttle's ``RateLimit-*``) reach the middleware. ``LogContextFilter`` stamps every
record with ``request_id``, ``run`` and ``conversation`` (``bind_run``: the run machinery's
tasks, which start in a context of their own), ``trace_id`` (the current OpenTelemetry span's,
when traces are on) and ``context``, the four as text for a formatter.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from contextvars import Context, ContextVar
from dataclasses import dataclass, field
from typing import Final

from opentelemetry import context as otel_context
from opentelemetry import trace

__all__ = [
    "HEADER",
    "LogContextFilter",
    "RequestScope",
    "add_headers",
    "bind_run",
    "context_of_its_own",
    "current_request_id",
    "current_trace_id",
    "open_scope",
    "request_id_from",
]

HEADER: Final = "X-Request-ID"
# What a client's id may be: a token (a UUID, a trace id), never text that could forge a log
# line or a header (spaces, newlines, quotes).
_WELL_FORMED: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+/=-]{0,127}")


@dataclass(slots=True)
class RequestScope:
    """One request's id and the headers its response gets (a view's own win)."""

    id: str
    headers: dict[str, str] = field(default_factory=dict)


_SCOPE: ContextVar[RequestScope | None] = ContextVar("orkestrel_request_scope", default=None)
_RUN: ContextVar[int | None] = ContextVar("orkestrel_run", default=None)
_CONVERSATION: ContextVar[str | None] = ContextVar("orkestrel_conversation", default=None)


def request_id_from(sent: str | None) -> str:
    """``sent`` when it is a well-formed id, else a new one (32 hex digits)."""
    if sent is not None and _WELL_FORMED.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


def open_scope(request_id: str) -> RequestScope:
    """A new scope for the request handled in this context.

    It is never closed: Django logs a request's refusal (``Not Found: ...``) and streams its
    body after the middleware returned, still in the request's context, and those lines must
    name it too. Under ASGI that context is the request's own task, and ends with it; a sync
    server's thread keeps it until its next request opens one.
    """
    scope = RequestScope(request_id)
    _SCOPE.set(scope)
    return scope


def current_request_id() -> str | None:
    """The id of the request being handled here, if any."""
    scope = _SCOPE.get()
    return None if scope is None else scope.id


def add_headers(headers: Mapping[str, str]) -> None:
    """Headers for the current request's response (nothing outside a request)."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.headers.update(headers)


def bind_run(run_id: int | None, conversation_id: str | None = None) -> None:
    """Name ``run_id`` (and its conversation, a job's id for a job) in the log lines written
    from here on in this context (a run's task)."""
    _RUN.set(run_id)
    _CONVERSATION.set(conversation_id)


def context_of_its_own() -> Context:
    """A new context for a task that outlives the request starting it (a run, a job): none of
    the request's context variables (its database thread's routing) but its id and its trace,
    so the task's log lines and spans belong to the request that started it."""
    fresh = Context()
    scope = _SCOPE.get()
    if scope is not None:
        fresh.run(_SCOPE.set, RequestScope(scope.id))
    fresh.run(otel_context.attach, otel_context.get_current())
    return fresh


def current_trace_id() -> str | None:
    """The current span's trace id as 32 hex digits (``None``: no span, traces off)."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


class LogContextFilter(logging.Filter):
    """Stamps each record with ``request_id``, ``run``, ``conversation``, ``trace_id`` (each
    ``-`` when unknown) and ``context`` (`` [request_id=… run=… conversation=… trace_id=…]``
    or empty); it never drops one. Attach it to handlers, so every logger's lines pass it."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = current_request_id()
        run = _RUN.get()
        conversation = _CONVERSATION.get()
        trace_id = current_trace_id()
        record.request_id = request_id or "-"
        record.run = "-" if run is None else str(run)
        record.conversation = conversation or "-"
        record.trace_id = trace_id or "-"
        parts = []
        if request_id is not None:
            parts.append(f"request_id={request_id}")
        if run is not None:
            parts.append(f"run={run}")
        if conversation is not None:
            parts.append(f"conversation={conversation}")
        if trace_id is not None:
            parts.append(f"trace_id={trace_id}")
        record.context = f" [{' '.join(parts)}]" if parts else ""
        return True
