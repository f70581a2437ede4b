"""An unbounded single-consumer async channel: the agent's pump writes, ``events`` drains."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

__all__ = ["Channel"]


class Channel[T]:
    """Producer ``push``es and ``close``s (or ``fail``s); the consumer iterates."""

    __slots__ = ("_buffer", "_closed", "_error", "_waiter")

    def __init__(self) -> None:
        self._buffer: deque[T] = deque()
        self._closed = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def push(self, item: T) -> None:
        """Append ``item``; ignored once closed."""
        if self._closed:
            return
        self._buffer.append(item)
        self._wake()

    def close(self) -> None:
        """End the stream; buffered items are still delivered."""
        self._closed = True
        self._wake()

    def fail(self, error: BaseException) -> None:
        """End the stream with ``error``, raised to the consumer after buffered items."""
        if not self._closed:
            self._error = error
        self.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def take(self) -> list[T]:
        """Everything buffered now, without waiting; the failure is raised once drained.

        For a consumer that handles chunks in batches instead of iterating (never both).
        """
        items = list(self._buffer)
        self._buffer.clear()
        if not items and self._closed and self._error is not None:
            raise self._error
        return items

    async def wait(self) -> None:
        """Park until an item is buffered or the channel is closed."""
        if self._buffer or self._closed:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        await waiter

    def __aiter__(self) -> AsyncIterator[T]:
        return self._drain()

    async def _drain(self) -> AsyncIterator[T]:
        buffer = self._buffer
        while True:
            while buffer:
                yield buffer.popleft()
            if self._closed:
                if self._error is not None:
                    raise self._error
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            await waiter
