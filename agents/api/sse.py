"""Server-Sent Events: a run's frames as an ``text/event-stream`` response.

Each frame is one event: ``id:`` its sequence number, ``event:`` its type, ``data:`` the frame
as JSON (the same object the websocket sends). A client that reconnects with ``Last-Event-ID``
(or ``?after=``) receives exactly the events after it. A stream of several runs (a
conversation's) names each event by its run too (``ids``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from orkestrel.protocol import encode_text
from orkestrel.telemetry.metrics import follower

__all__ = ["HEARTBEAT_SECONDS", "EventStreamRenderer", "event_stream", "format_event"]

# A comment line this often keeps proxies and load balancers from closing a quiet stream.
HEARTBEAT_SECONDS = 15.0


class EventStreamRenderer(BaseRenderer):
    """Lets a view negotiate ``Accept: text/event-stream`` (the view streams the body)."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        # Only an error reaches a renderer on an event-stream request: send it as one event.
        return f"event: error\ndata: {encode_text(data)}\n\n".encode()


EventIds = Callable[[dict[str, Any]], str]


def _seq(frame: dict[str, Any]) -> str:
    return str(frame["seq"])


def format_event(frame: dict[str, Any], ids: EventIds = _seq) -> str:
    """One frame as an SSE event (``ids``: its event id, by default its ``seq``)."""
    head = f"id: {ids(frame)}\n" if frame.get("seq") is not None else ""
    return f"{head}event: {frame['type']}\ndata: {encode_text(frame)}\n\n"


async def _events(
    batches: AsyncIterator[list[dict[str, Any]] | None], ids: EventIds
) -> AsyncIterator[str]:
    # Every frame that is ready goes out in one chunk: no task or timer per frame (a stream
    # must keep up with its run); a quiet stream gets a keep-alive comment instead.
    release = follower("sse")
    try:
        async for batch in batches:
            if batch is None:
                yield ": keep-alive\n\n"
            else:
                yield "".join(format_event(frame, ids) for frame in batch)
    finally:
        release()


def event_stream(
    batches: AsyncIterator[list[dict[str, Any]] | None],
    status: int = 200,
    *,
    ids: EventIds = _seq,
) -> StreamingHttpResponse:
    """A streaming response of a run's frames as SSE (``RunService.follow_batches``); the
    stream ends with the run (``ids``: each event's id, by default the frame's ``seq``)."""
    response = StreamingHttpResponse(
        _events(batches, ids), status=status, content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    # nginx buffers proxied responses unless told not to.
    response["X-Accel-Buffering"] = "no"
    return response
