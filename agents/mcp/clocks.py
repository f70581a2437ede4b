"""The time limits of one connection's requests, stopped while a person answers the server.

A call's timeout measures the server. When the server asks the user something mid-call (MCP
elicitation), the call waits on a person, who has a time limit of their own (the run's input
bridge): while any question of the connection is open, every request of the connection is off
the clock, and each resumes with the time it had left. (A call running beside the question
gets that grace too; it is still bounded once the question is answered.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterator

__all__ = ["RequestClocks"]


class RequestClocks:
    """The running requests' limits, each with the seconds it has left while paused."""

    def __init__(self) -> None:
        self._limits: dict[asyncio.Timeout, float] = {}
        self._pauses = 0

    async def within[T](self, work: Awaitable[T], seconds: float) -> T:
        """``work`` bounded by ``seconds`` on the clock (``TimeoutError`` past them)."""
        async with asyncio.timeout(None) as limit:
            self._limits[limit] = seconds
            if not self._pauses:
                limit.reschedule(asyncio.get_running_loop().time() + seconds)
            try:
                return await work
            finally:
                del self._limits[limit]

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop every request's clock while the block runs (blocks may nest and overlap)."""
        now = asyncio.get_running_loop().time()
        if not self._pauses:
            for limit in self._limits:
                when = limit.when()
                if when is not None and not limit.expired():
                    self._limits[limit] = max(when - now, 0.0)
                    limit.reschedule(None)
        self._pauses += 1
        try:
            yield
        finally:
            self._pauses -= 1
            if not self._pauses:
                now = asyncio.get_running_loop().time()
                for limit, left in self._limits.items():
                    if not limit.expired():
                        limit.reschedule(now + left)
