"""A restartable deadline whose signal fires when it runs out."""

from __future__ import annotations

import asyncio

from .abort import TIMED_OUT, AbortSignal

__all__ = ["Timeout", "create_timeout"]


class Timeout:
    """A deadline of ``seconds``: ``start()`` arms it, ``clear()`` disarms it."""

    __slots__ = ("_handle", "_signal", "seconds")

    def __init__(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"timeout must be a non-negative number of seconds, not {seconds!r}")
        self.seconds = float(seconds)
        self._signal = AbortSignal()
        self._handle: asyncio.TimerHandle | None = None

    @property
    def signal(self) -> AbortSignal:
        return self._signal

    def start(self) -> Timeout:
        """Arm the deadline from now (a fired one gets a fresh signal); needs a running loop."""
        self.clear()
        if self._signal.aborted:
            self._signal = AbortSignal()
        self._handle = asyncio.get_running_loop().call_later(
            self.seconds, self._signal._fire, TIMED_OUT
        )
        return self

    def clear(self) -> None:
        """Disarm the deadline; the signal keeps its current state."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def create_timeout(seconds: float) -> Timeout:
    """Create an unarmed ``Timeout`` of ``seconds``."""
    return Timeout(seconds)
