"""Seed 004's fine-grained events of one run: blocks of text and reasoning, model requests.

The run's ``token`` and ``think`` frames are the blocks' deltas; this adds what frames them:
``block_start`` before a block's first delta, ``block_end`` (its whole text, how long it took)
when something else begins, and ``request_start`` / ``request_done`` / ``request_error``
around each model request. The run feeds it what it handles, in stream order, and it emits
through the run (so buffered deltas go out first and every frame keeps its place).

It also keeps what each request thought and how long (``take``): an answer's reasoning is
stored with its assistant message, as the chat showed it live.

Markers the run puts in its own chunk stream, so that events the kit reports outside the
stream (a request starts; calls start running) keep their place among the chunks:
``RequestStarted`` and ``Executing``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from conversations.writer import Thought
from orkestrel.core import TokenUsage, ToolCall
from orkestrel.protocol import (
    BlockEndFrame,
    BlockStartFrame,
    RequestDoneFrame,
    RequestErrorFrame,
    RequestStartFrame,
    usage_payload,
)

__all__ = ["Executing", "Lifecycle", "RequestStarted"]

BlockKind = Literal["text", "thinking"]
Emit = Callable[..., None]


@dataclass(frozen=True, slots=True)
class RequestStarted:
    """Marker: model request ``turn`` begins here in the stream."""

    turn: int


@dataclass(frozen=True, slots=True)
class Executing:
    """Marker: these calls start running here in the stream."""

    calls: Sequence[ToolCall]


class Lifecycle:
    """The open block and the open request of one run, and the frames that close them."""

    __slots__ = (
        "_block",
        "_cap",
        "_emit",
        "_index",
        "_latest",
        "_now",
        "_parts",
        "_started",
        "_thinking",
        "_thinking_ms",
        "_turn",
    )

    def __init__(self, emit: Emit, now: Callable[[], float], cap: int) -> None:
        self._emit = emit
        self._cap = cap
        self._now = now
        self._block: BlockKind | None = None
        self._index = -1
        self._parts: list[str] = []
        self._started = 0.0
        self._turn: int | None = None
        # The request the deltas belong to (the open one, else the last one opened).
        self._latest = 0
        # Each request's reasoning and how long its thinking blocks took, by request turn.
        self._thinking: dict[int, list[str]] = {}
        self._thinking_ms: dict[int, int] = {}

    def text(self, content: str) -> None:
        self._delta("text", content)

    def thinking(self, content: str) -> None:
        self._delta("thinking", content)

    def _delta(self, kind: BlockKind, content: str) -> None:
        if self._block != kind:
            self.close_block()
            self._block, self._parts, self._started = kind, [], self._now()
            self._index += 1
            self._emit(BlockStartFrame, index=self._index, block=kind)
        self._parts.append(content)
        if kind == "thinking":
            self._thinking.setdefault(self._latest, []).append(content)

    def close_block(self) -> None:
        """The open block ends (something other than its deltas came)."""
        kind = self._block
        if kind is None:
            return
        seconds = round(self._now() - self._started, 3)
        if kind == "thinking":
            spent = self._thinking_ms.get(self._latest, 0)
            self._thinking_ms[self._latest] = spent + round(seconds * 1000)
        self._block = None
        content, self._parts = "".join(self._parts), []
        # A long block's text stays with its deltas: one frame must stay under a socket's
        # limit (the client keeps what it joined).
        whole = content if len(content) <= self._cap else None
        self._emit(BlockEndFrame, index=self._index, block=kind, content=whole, seconds=seconds)

    def take(self, turn: int) -> Thought | None:
        """What request ``turn`` thought (its blocks joined) and how long, handed over once
        (its answer keeps it); ``None``: nothing."""
        text = self._text(turn)
        self._thinking.pop(turn, None)
        return Thought(text, self._thinking_ms.pop(turn, None)) if text else None

    def thinking_from(self, turn: int) -> str:
        """The reasoning of request ``turn`` and of every later one, joined."""
        return "".join(self._text(key) for key in sorted(self._thinking) if key >= turn)

    def _text(self, turn: int) -> str:
        # Joined once and kept joined: a checkpoint reads it every second.
        parts = self._thinking.get(turn)
        if not parts:
            return ""
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0]

    def request_started(self, turn: int) -> None:
        self.request_done()
        self._turn = self._latest = turn
        self._emit(RequestStartFrame, turn=turn)

    def request_done(self, usage: TokenUsage | None = None) -> None:
        """The open request (if any) ended, with the usage the model reported."""
        self.close_block()
        if self._turn is None:
            return
        turn, self._turn = self._turn, None
        self._emit(
            RequestDoneFrame, turn=turn, usage=usage_payload(usage) if usage is not None else None
        )

    def request_failed(self, message: str) -> None:
        """The run failed while a request was open: that request failed."""
        self.close_block()
        if self._turn is None:
            return
        turn, self._turn = self._turn, None
        self._emit(RequestErrorFrame, turn=turn, message=message[:500])
