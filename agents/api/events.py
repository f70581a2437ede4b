"""The OpenAPI description of a run's event stream (Server-Sent Events).

A stream is a sequence of events, each ``id`` (the frame's ``seq``), ``event`` (its ``type``)
and ``data`` (the frame as JSON); the frames are the websocket's (``orkestrel.protocol``).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import serializers

from orkestrel.protocol import SERVER_FRAMES

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
    examples=[
        OpenApiExample(
            "A short run",
            value=(
                'id: 1\nevent: started\ndata: {"type": "started", "run": 7, "seq": 1, ...}\n\n'
                'id: 2\nevent: token\ndata: {"type": "token", "run": 7, "seq": 2, '
                '"content": "Hello"}\n\n'
                'id: 5\nevent: finish\ndata: {"type": "finish", "run": 7, "seq": 5, ...}\n\n'
            ),
        )
    ],
)
