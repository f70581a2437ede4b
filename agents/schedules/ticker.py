"""The scheduler: every ``SCHEDULE_TICK_SECONDS`` it starts the due schedules and, once a day,
the purge.

``tick(now)`` is one pass, with the time passed in (tests give it theirs). ``Scheduler`` runs
passes for as long as its loop lives: in the server process when jobs run there (``make run``,
no broker: ``agents.schedules.asgi``), on every Celery worker when they run on workers
(``agents.schedules.tasks``). Several tickers may run at once: each occurrence and each daily
purge is claimed in the database, so each happens once.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from orkestrel.db import in_thread

from ..jobs.service import spawn
from ..retention import PurgeResult, purge_if_due
from .firing import Firing, claim_due
from .service import Started, start_schedule

__all__ = ["TICK_SECONDS", "Scheduler", "Tick", "tick"]

logger = logging.getLogger(__name__)

TICK_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Tick:
    """What one pass did: the schedules it started (and failed to), and the purge if it ran."""

    started: tuple[Started, ...] = ()
    failed: tuple[Firing, ...] = ()
    purged: PurgeResult | None = field(default=None)


async def tick(now: datetime | None = None) -> Tick:
    """Start every schedule due at ``now`` (default: the clock's), then the purge if due."""
    moment = now or timezone.now()
    started: list[Started] = []
    failed: list[Firing] = []
    for firing in await in_thread(claim_due)(moment):
        try:
            started.append(await start_schedule(firing))
        except Exception:  # noqa: BLE001 - one schedule's failure must not stop the others
            logger.warning("schedule %s could not start", firing.schedule_id, exc_info=True)
            failed.append(firing)
    purged = None
    try:
        purged = await in_thread(purge_if_due)(moment)
    except Exception:  # noqa: BLE001 - the next tick tries again
        logger.warning("the daily purge failed", exc_info=True)
    if purged is not None:
        logger.info("daily purge: %s", dict(purged.counts))
    return Tick(started=tuple(started), failed=tuple(failed), purged=purged)


class Scheduler:
    """Ticks every ``interval`` seconds on the loop that started it, until stopped."""

    def __init__(self, interval: float | None = None) -> None:
        self.interval = interval or float(
            getattr(settings, "ORKESTREL", {}).get("SCHEDULE_TICK_SECONDS", TICK_SECONDS)
        )
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start ticking (on the running loop); again only if it stopped."""
        if self._task is None or self._task.done():
            self._task = spawn(self._run())

    async def stop(self) -> None:
        """Stop ticking (a start in flight is cancelled: that occurrence is skipped)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await tick()
            except Exception:  # noqa: BLE001 - the database may be back at the next tick
                logger.warning("the scheduler's tick failed", exc_info=True)
            await asyncio.sleep(self.interval)
