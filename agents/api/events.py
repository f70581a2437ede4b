"""The OpenAPI description of a run's event stream (Server-Sent Events).

A stream is a sequence of events, each ``id`` (the frame's ``seq``), ``event`` (its ``type``)
and ``data`` (the frame as JSON); the frames are the websocket's (``orkestrel.protocol``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from orkestrel.protocol import SERVER_FRAMES

from . import examples

__all__ = ["CONVERSATION_STREAM_RESPONSE", "EVENT_STREAM_RESPONSE", "SEND_STREAM_RESPONSE"]

RUN_EVENTS = sorted(kind for kind in SERVER_FRAMES if kind != "state")

EVENT_STREAM_RESPONSE = OpenApiResponse(
    response=inline_serializer(
        "RunEvent",
        fields={
            "id": serializers.CharField(
                help_text="The frame's sequence number in its run (`seq`), as SSE sends it."
            ),
            "event": serializers.ChoiceField(choices=RUN_EVENTS, help_text="The frame's type."),
            "data": serializers.JSONField(help_text="The frame, as the websocket sends it."),
        },
    ),
    description=(
        "`text/event-stream`: one event per frame of the run, ending with `finish` (or an "
        "`error` carrying the run). Reconnect with `Last-Event-ID` to receive exactly the "
        "events after it."
    ),
    examples=[examples.RUN_EVENTS, examples.RESUMED_EVENTS],
)


def _stream_event(name: str, id_text: str) -> Any:
    return inline_serializer(
        name,
        fields={
            "id": serializers.CharField(help_text=id_text),
            "event": serializers.ChoiceField(choices=RUN_EVENTS, help_text="The frame's type."),
            "data": serializers.JSONField(
                help_text="The frame, as the websocket sends it (its `run` names its run)."
            ),
        },
    )


CONVERSATION_STREAM_RESPONSE = OpenApiResponse(
    response=_stream_event(
        "ConversationEvent", "Opaque: send it back as `Last-Event-ID` to resume after it."
    ),
    description=(
        "`text/event-stream`: one event per frame of the conversation's runs, run after run; "
        "it stays open for the runs to come. Reconnect with `Last-Event-ID` to receive "
        "exactly the events after it."
    ),
    examples=[examples.CONVERSATION_EVENTS],
)

SEND_STREAM_RESPONSE = OpenApiResponse(
    response=_stream_event(
        "SentEvent",
        "The frame's `seq` (the run the message started: resume at `/api/runs/{id}/events/`); "
        "for a queued message, opaque (resume at `/api/conversations/{id}/events/`).",
    ),
    description=(
        "`text/event-stream`: the run the message started, one event per frame, ending with "
        "`finish` (or an `error` carrying the run). A message that waited behind a run: that "
        "run's frames from the send on, then each run after it, to the end of the one that "
        "took the message."
    ),
    examples=[examples.RUN_EVENTS, examples.CONVERSATION_EVENTS],
)
