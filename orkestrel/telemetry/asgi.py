"""The server span of every HTTP request and websocket, when traces are on, so a run started
by a request or a socket's message is a child of it; an incoming ``traceparent`` continues the
caller's trace. Off, the application is left as it is.

HTTP goes through OpenTelemetry's ASGI middleware. A websocket gets one span for its whole
connection from ``SocketSpan`` instead: the middleware also touches its span at every frame
sent (a streaming run sends hundreds), which ``bench/relay.py --telemetry`` measured at a few
per cent of a run's CPU.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from opentelemetry import propagate
from opentelemetry.trace import SpanKind

from .switch import SWITCH

__all__ = ["SocketSpan", "traced"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Application = Callable[[Scope, Receive, Send], Awaitable[None]]


def traced(application: Application) -> Application:
    """``application`` under a server span per request and socket (itself with traces off)."""
    if SWITCH.tracer is None:
        return application
    # Imported here: a process without traces never loads the instrumentation.
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    http = OpenTelemetryMiddleware(
        application,
        tracer_provider=SWITCH.provider,
        # One span per request, not one more per message in and out.
        exclude_spans=["receive", "send"],
    )
    return SocketSpan(application, http)


class SocketSpan:
    """A websocket's one server span (``WS <path>``); any other scope goes to ``http``."""

    def __init__(self, application: Application, http: Application) -> None:
        self.application = application
        self.http = http

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = SWITCH.tracer
        if scope["type"] != "websocket" or tracer is None:
            await self.http(scope, receive, send)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1")
            for key, value in scope.get("headers", ())
            if key in (b"traceparent", b"tracestate")
        }
        path = scope.get("path", "")
        with tracer.start_as_current_span(
            f"WS {path}",
            context=propagate.extract(headers) if headers else None,
            kind=SpanKind.SERVER,
            attributes={"url.path": path, "url.scheme": scope.get("scheme", "ws")},
        ):
            await self.application(scope, receive, send)
