"""Checkpoints: every active run's in-flight text, saved every ``timings.checkpoint`` seconds.

A crash loses at most that much of an answer. One statement saves every run at once, so the
database thread (and the GIL) stays out of the streams' way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from orkestrel.db import in_thread

from .fanout import spawn
from .records import save_checkpoints

__all__ = ["Checkpointer"]

logger = logging.getLogger(__name__)

Rows = list[tuple[int, str, str]]


class Checkpointer:
    """One task that saves what ``rows()`` returns while ``running()`` says runs are active."""

    def __init__(self, every: float, rows: Callable[[], Rows], running: Callable[[], bool]) -> None:
        self._every = every
        self._rows = rows
        self._running = running
        self._task: asyncio.Task[None] | None = None
        self._saving: asyncio.Future[None] | None = None

    def ensure(self) -> None:
        """Start the task if it is not going (the first run of a quiet spell)."""
        if self._task is None or self._task.done():
            self._task = spawn(self._loop())

    async def _loop(self) -> None:
        while self._running():
            await asyncio.sleep(self._every)
            rows = self._rows()
            if not rows:
                continue
            self._saving = asyncio.ensure_future(in_thread(save_checkpoints)(rows))
            try:
                await self._saving
            except Exception:  # noqa: BLE001 - a failed checkpoint must not stop the next
                logger.warning("saving run checkpoints failed", exc_info=True)

    async def done(self) -> None:
        """Wait for a checkpoint write in flight, if any (a run's final write goes after it)."""
        if self._saving is not None and not self._saving.done():
            await asyncio.gather(self._saving, return_exceptions=True)
