"""Local fan-out: every frame of a conversation, in order, to each subscriber in this process.

One queue and one task deliver every frame; a subscriber that fails (a closed socket) is
skipped, never the others. Frames to share with other processes are handed on to ``forward``;
frames of runs held elsewhere arrive here from the relay (``Relay.follow``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from orkestrel.request_scope import context_of_its_own

__all__ = ["FanOut", "Subscriber", "going", "spawn"]

logger = logging.getLogger(__name__)

Subscriber = Callable[[dict[str, Any]], Awaitable[None]]
# Frames delivered in a row before the loop gets a turn.
YIELD_EVERY = 256


def spawn[T](work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task of the run machinery's, in a context of its own.

    A run may start inside a sync view's ``async_to_sync`` call, whose context routes database
    hops to that request's thread; the run outlives the request, so its hops must go to the
    server's shared database thread instead, as they do for a run the websocket started. Only
    the request's id and trace go on in it (``context_of_its_own``).
    """
    return asyncio.get_running_loop().create_task(work, context=context_of_its_own())


def going(task: asyncio.Task[Any] | None) -> bool:
    """Whether ``task`` is still going in the running loop: a task of a loop that was closed
    (a test's) never finishes, and a queue it waits on wakes nothing in this one."""
    return task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop()


class FanOut:
    """This process's subscribers, by conversation, and the task that feeds them."""

    def __init__(self, forward: Callable[[str, dict[str, Any]], None]) -> None:
        self._forward = forward
        self._subscribers: dict[str, set[Subscriber]] = {}
        self._outbox: asyncio.Queue[tuple[str, dict[str, Any], bool]] | None = None
        self._publisher: asyncio.Task[None] | None = None

    def subscribe(self, conversation_id: str, subscriber: Subscriber) -> Callable[[], None]:
        """Deliver this conversation's frames to ``subscriber``; returns the unsubscribe."""
        self._subscribers.setdefault(conversation_id, set()).add(subscriber)

        def unsubscribe() -> None:
            subscribers = self._subscribers.get(conversation_id)
            if subscribers is not None:
                subscribers.discard(subscriber)
                if not subscribers:
                    del self._subscribers[conversation_id]

        return unsubscribe

    def publish(self, conversation_id: str, frame: dict[str, Any], share: bool) -> None:
        """Queue ``frame`` for every subscriber; ``share`` also forwards it to other processes."""
        if self._outbox is None or not going(self._publisher):
            self._outbox = asyncio.Queue()
            self._publisher = spawn(self._deliver(self._outbox))
        self._outbox.put_nowait((conversation_id, frame, share))

    async def _deliver(self, outbox: asyncio.Queue[tuple[str, dict[str, Any], bool]]) -> None:
        delivered = 0
        while True:
            if outbox.empty():
                delivered = 0  # the wait below gives the loop its turn
            elif delivered >= YIELD_EVERY:
                # A socket's send rarely waits: a burst (a relay message carrying hundreds of
                # frames) would otherwise hold the loop, and the layer's reads behind it.
                delivered = 0
                await asyncio.sleep(0)
            try:
                conversation_id, frame, share = await outbox.get()
            except RuntimeError:
                # Closed with its event loop (a server stopping, a test's loop ending): the
                # queue cannot even cancel its wait, and nothing is left to deliver.
                return
            delivered += 1
            for subscriber in list(self._subscribers.get(conversation_id, ())):
                try:
                    await subscriber(frame)
                except Exception:  # noqa: BLE001 - one broken socket must not stop the others
                    logger.debug("dropping frame for a closed subscriber", exc_info=True)
            if share:
                self._forward(conversation_id, frame)
            outbox.task_done()

    async def drain(self) -> None:
        """Wait until every queued frame was delivered (tests and shutdown)."""
        if self._outbox is not None and going(self._publisher):
            await self._outbox.join()
