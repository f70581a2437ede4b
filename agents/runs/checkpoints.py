"""What keeps runs durable across a crash: checkpoints with heartbeats, and the sweep.

Every ``timings.checkpoint`` seconds each active run's in-flight text is saved and its
heartbeat moved, in one database hop for all of them (the database thread, and the GIL, stay
out of the streams' way); a crash loses at most that much of an answer. Every
``timings.sweep`` seconds any process closes the runs whose heartbeat went stale, whichever
process held them, keeping their text: a killed server's runs end as ``interrupted``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from conversations.approvals import expire_due
from conversations.questions import expire_due_questions
from orkestrel.db import in_thread

from .fanout import going, spawn
from .interruptions import Interrupted, close_interrupted
from .records import save_checkpoints

__all__ = ["Checkpointer", "Sweeper"]

logger = logging.getLogger(__name__)

Rows = list[tuple[int, str, str]]


class Checkpointer:
    """One task that saves what ``rows()`` returns and moves the heartbeat of ``alive()``'s
    runs, while there are any."""

    def __init__(
        self, every: float, rows: Callable[[], Rows], alive: Callable[[], list[int]]
    ) -> None:
        self._every = every
        self._rows = rows
        self._alive = alive
        self._task: asyncio.Task[None] | None = None
        self._saving: asyncio.Future[None] | None = None

    def ensure(self) -> None:
        """Start the task if it is not going (the first run of a quiet spell)."""
        if not going(self._task):
            self._task = spawn(self._loop())

    async def _loop(self) -> None:
        while self._alive():
            await asyncio.sleep(self._every)
            alive = self._alive()
            if not alive:
                continue
            self._saving = asyncio.ensure_future(in_thread(save_checkpoints)(self._rows(), alive))
            try:
                await self._saving
            except Exception:  # noqa: BLE001 - a failed checkpoint must not stop the next
                logger.warning("saving run checkpoints failed", exc_info=True)

    async def done(self) -> None:
        """Wait for a checkpoint write in flight, if any (a run's final write goes after it)."""
        if self._saving is not None and not self._saving.done():
            await asyncio.gather(self._saving, return_exceptions=True)


class Sweeper:
    """One task per process that closes dead runs every ``every`` seconds, from its first use,
    and hands them to ``closed`` (their followers hear they ended there); expires the
    approvals nobody decided in time, then calls ``then`` (runs paused for approvals, and
    messages left waiting by a closed run, go on there)."""

    def __init__(
        self,
        every: float,
        stale: float,
        then: Callable[[], Awaitable[None]] | None = None,
        closed: Callable[[list[Interrupted]], Awaitable[None]] | None = None,
    ) -> None:
        self._every = every
        self._stale = stale
        self._then = then
        self._closed = closed
        self._task: asyncio.Task[None] | None = None

    def ensure(self) -> None:
        """Start the task if it is not going in this event loop."""
        if not going(self._task):
            self._task = spawn(self._loop())

    async def _loop(self) -> None:
        while True:
            try:
                closed = await in_thread(close_interrupted)(self._stale)
                if closed:
                    logger.info("closed %d run(s) whose server process died", len(closed))
                    if self._closed is not None:
                        await self._closed(closed)
            except Exception:  # noqa: BLE001 - the next sweep tries again
                logger.warning("closing dead runs failed", exc_info=True)
            await self.approvals()
            await asyncio.sleep(self._every)

    async def approvals(self) -> None:
        """Expire the approvals whose time ran out, then let ``then`` go on with runs."""
        try:
            expired = await in_thread(expire_due)()
            if expired:
                logger.info("%d tool call(s) expired waiting for approval", expired)
            unanswered = await in_thread(expire_due_questions)()
            if unanswered:
                logger.info("%d question(s) expired waiting for an answer", unanswered)
            if self._then is not None:
                await self._then()
        except Exception:  # noqa: BLE001 - the next sweep tries again
            logger.warning("going on after approvals failed", exc_info=True)
