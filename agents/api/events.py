"""The OpenAPI description of a run's event stream (Server-Sent Events).

A stream is a sequence of events, each ``id`` (the frame's ``seq``), ``event`` (its ``type``)
and ``data`` (the frame as JSON); the frames are the websocket's (``orkestrel.protocol``).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from orkestrel.protocol import SERVER_FRAMES

from . import examples

__all__ = ["EVENT_STREAM_RESPONSE"]

RUN_EVENTS = sorted(kind for kind in SERVER_FRAMES if kind != "state")

EVENT_STREAM_RESPONSE = OpenApiResponse(
    response=inline_serializer(
        "RunEvent",
        fields={
            "id": serializers.IntegerField(help_text="The frame's sequence number in its run."),
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
