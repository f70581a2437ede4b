"""A running command's card: the last lines of its output and how long it has run.

``OutputTail`` is fed the command's output as it is read (both streams, each decoded on its
own) and keeps only its last ``TAIL_LINES`` lines, each cut to ``LINE_CHARS`` characters; a
carriage return starts its line over, as a terminal shows a progress bar. It reports to the
call's card (a ``tool_progress`` frame) when the output changed, at most once every
``every`` seconds: a command printing a million lines costs the chat a frame a tick, and the
run's stored frame log stays small. What came in the last interval goes out when it ends.
"""

from __future__ import annotations

import asyncio
import codecs
from collections import deque
from typing import Literal, TypedDict

from .reports import Report

__all__ = ["EVERY_SECONDS", "LINE_CHARS", "TAIL_LINES", "CommandDisplay", "OutputTail"]

TAIL_LINES = 12
LINE_CHARS = 300
# Reports a second at most: enough to watch a build, few enough frames to store.
EVERY_SECONDS = 0.5


class CommandDisplay(TypedDict):
    """A running command's card: ``lines`` (the output's tail) and ``elapsed`` seconds."""

    kind: Literal["command"]
    lines: list[str]
    elapsed: float


class _Stream:
    """One output stream: its decoder and its line not ended yet."""

    __slots__ = ("decoder", "open")

    def __init__(self) -> None:
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.open = ""


def _shown(line: str) -> str:
    # What a terminal would show of it: the text after its last carriage return, cut short.
    return line[line.rfind("\r") + 1 :][:LINE_CHARS]


class OutputTail:
    """The last lines of one command's output, reported through ``report`` (see the module)."""

    __slots__ = (
        "_changed",
        "_closed",
        "_every",
        "_last",
        "_lines",
        "_loop",
        "_report",
        "_started",
        "_streams",
        "_timer",
    )

    def __init__(self, report: Report, *, every: float = EVERY_SECONDS) -> None:
        self._report = report
        self._every = every
        self._loop = asyncio.get_running_loop()
        self._started = self._loop.time()
        self._last = float("-inf")
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)
        self._streams: dict[str, _Stream] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._changed = False
        self._closed = False

    def feed(self, stream: str, chunk: bytes) -> None:
        """Output just read from ``stream`` (``stdout`` or ``stderr``)."""
        if self._closed:
            return
        state = self._streams.setdefault(stream, _Stream())
        text = state.open + state.decoder.decode(chunk)
        *ended, rest = text.split("\n")
        for line in ended[-TAIL_LINES:]:
            self._lines.append(_shown(line))
        # An unended line stays bounded: a progress bar's redraws keep only the latest.
        state.open = rest[rest.rfind("\r") + 1 :][-4 * LINE_CHARS :]
        self._changed = True
        self._schedule()

    def display(self) -> CommandDisplay:
        """The card now."""
        lines = list(self._lines)
        lines.extend(_shown(state.open) for state in self._streams.values() if state.open)
        elapsed = round(self._loop.time() - self._started, 1)
        return {"kind": "command", "lines": lines[-TAIL_LINES:], "elapsed": elapsed}

    def close(self) -> None:
        """The command ended: nothing more is reported (its result replaces the card)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        wait = self._last + self._every - self._loop.time()
        if wait <= 0:
            self._send()
        else:
            self._timer = self._loop.call_later(wait, self._send)

    def _send(self) -> None:
        self._timer = None
        if self._closed or not self._changed:
            return
        self._changed = False
        self._last = self._loop.time()
        self._report(self.display())
