"""When a run's next text frame may go: a credit bucket with a least gap between frames.

Pure (no clock, no I/O): the caller passes the time. Each frame costs a credit; credit comes
back at about one per tick (``refill`` times faster), up to ``burst``; frames are at least
``gap`` apart. A stream at or under the tick rate never waits; a fast one gets one frame per
tick; deltas that arrive close together after a stall share a frame.
"""

from __future__ import annotations

from .timings import RunTimings

__all__ = ["Pacer"]


class Pacer:
    """The pacing state of one run's text frames."""

    __slots__ = ("_credit", "_last", "_stamp", "timings")

    def __init__(self, timings: RunTimings, now: float) -> None:
        self.timings = timings
        self._credit = float(timings.burst)
        self._stamp = now
        self._last = -timings.gap

    def _refill(self, now: float) -> None:
        timings = self.timings
        elapsed = now - self._stamp
        self._credit = min(timings.burst, self._credit + elapsed * timings.refill / timings.tick)
        self._stamp = now

    def delay(self, now: float) -> float:
        """Seconds to wait before the next frame may go (0: at once)."""
        self._refill(now)
        timings = self.timings
        due = max(
            self._last + timings.gap, now + (1 - self._credit) * timings.tick / timings.refill
        )
        return max(0.0, due - now)

    def sent(self, now: float) -> None:
        """A frame went out at ``now``."""
        self._refill(now)
        self._credit -= 1
        self._last = now
