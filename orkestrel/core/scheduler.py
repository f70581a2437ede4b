"""The pacing seam the agent loop yields to between turns."""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from .abort import AbortSignal

__all__ = ["Scheduler", "create_sleep_scheduler"]


@runtime_checkable
class Scheduler(Protocol):
    """Cooperative pacing: ``yield_`` is awaited before turns 2..N, never after the last."""

    async def yield_(self, *, signal: AbortSignal | None = None) -> None: ...


class SleepScheduler:
    """Waits ``seconds`` between turns (wakes early when the run is cancelled)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float = 0.0) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"scheduler seconds must be a non-negative number, not {seconds!r}")
        self.seconds = float(seconds)

    async def yield_(self, *, signal: AbortSignal | None = None) -> None:
        if self.seconds == 0 or signal is None:
            await asyncio.sleep(self.seconds)
            return
        if signal.aborted:
            return
        waiter = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({waiter}, timeout=self.seconds)
        finally:
            waiter.cancel()
            try:
                await waiter
            except asyncio.CancelledError:
                pass


def create_sleep_scheduler(seconds: float = 0.0) -> SleepScheduler:
    """A scheduler that yields to the event loop (and optionally waits) between turns."""
    return SleepScheduler(seconds)
