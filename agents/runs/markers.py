"""What the kit reports outside a run's chunk stream, put in its place among the chunks.

A model request starting, calls starting to run, a piece of a call the model is writing, a
tool's report on a running call: each is reported by a callback, not in the stream. While the
run's stream is open each goes in it as a marker, so the drive loop reaches it after every
chunk before it (and its frames after theirs); once the stream closed, it goes to the frames
at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orkestrel.core import Channel, ToolCall
from orkestrel.providers.base import CallDelta

from ..runtime.reports import ToolReport
from .chunk_frames import ChunkFrames
from .lifecycle import Executing, RequestStarted

__all__ = ["Markers"]


class Markers:
    """The callbacks that mark one run's chunk stream (``channel``, set once it streams)."""

    __slots__ = ("channel", "chunks")

    def __init__(self, chunks: ChunkFrames) -> None:
        self.chunks = chunks
        self.channel: Channel[Any] | None = None

    def _mark(self, marker: Any) -> bool:
        """Put ``marker`` in the stream; whether it went in."""
        channel = self.channel
        if channel is None or channel.closed:
            return False
        channel.push(marker)
        return True

    def call_delta(self, delta: CallDelta) -> None:
        """A piece of a tool call the model is writing (paced like text)."""
        if not self._mark(delta):
            self.chunks.call_piece(delta)

    def executing(self, calls: Sequence[ToolCall]) -> None:
        """Calls start running now: each card says so until its result comes."""
        if not self._mark(Executing(tuple(calls))):
            self.chunks.calls_started(calls)

    def reported(self, report: ToolReport) -> None:
        """A tool reported on a running call: after what streamed before it, its card shows
        the report (a ``tool_progress`` frame)."""
        if not self._mark(report):
            self.chunks.progress(report)

    def turn_started(self, turn: int) -> None:
        # The first request's start goes out when the stream opens (before any chunk).
        if turn:
            self._mark(RequestStarted(turn))
