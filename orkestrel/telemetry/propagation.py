"""A trace carried across processes: into Celery messages, outgoing HTTP requests and MCP
calls as W3C ``traceparent`` / ``tracestate`` headers, and back out of a message on a worker.

Both ends do nothing while traces are off: no headers go out, none are read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from opentelemetry import context, propagate

from .switch import SWITCH

__all__ = ["message_carrier", "outgoing", "within"]

# The headers the W3C trace context propagator writes.
_KEYS = ("traceparent", "tracestate")


def outgoing() -> dict[str, str]:
    """The current trace's headers for a message or request (empty: traces off, no span)."""
    if SWITCH.tracer is None:
        return {}
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def message_carrier(request: Any) -> dict[str, str]:
    """The trace headers a Celery task's message brought (``request``: ``Task.request``).

    Celery puts a message's own headers on the request, and in ``request.headers`` in some
    versions: either is read.
    """
    if SWITCH.tracer is None:
        return {}
    nested = getattr(request, "headers", None)
    found: dict[str, str] = {}
    for key in _KEYS:
        value = getattr(request, key, None)
        if value is None and isinstance(nested, Mapping):
            value = nested.get(key)
        if isinstance(value, str) and value:
            found[key] = value
    return found


async def within[T](carrier: Mapping[str, str], work: Awaitable[T]) -> T:
    """Await ``work`` in the trace ``carrier`` names (what it starts inherits it)."""
    if SWITCH.tracer is None or not carrier:
        return await work
    token = context.attach(propagate.extract(dict(carrier)))
    try:
        return await work
    finally:
        context.detach(token)
