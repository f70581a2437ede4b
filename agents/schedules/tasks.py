"""The Celery side of schedules: every worker ticks, on its worker loop (``orkestrel.celery``).

When jobs run on workers the server process does not tick; each worker does, from the moment
it is ready. Ticks on several workers are safe: each occurrence is claimed once in the
database (``firing.claim_due``), and the jobs they start go to the broker like any other.
"""

from __future__ import annotations

from typing import Any

from celery.signals import worker_ready

from orkestrel.celery import WorkerLoop, worker_loop

from .ticker import Scheduler

__all__ = ["SchedulerPart"]


class SchedulerPart:
    """The scheduler as a part of a worker loop (stopped with it)."""

    def __init__(self) -> None:
        self.scheduler = Scheduler()

    @classmethod
    async def start(cls, worker: WorkerLoop) -> SchedulerPart:
        """Made on the loop: it ticks at once."""
        part = cls()
        part.scheduler.start()
        return part

    async def stop(self) -> None:
        await self.scheduler.stop()


@worker_ready.connect
def _tick_on_workers(sender: Any = None, **_: Any) -> None:
    worker_loop(getattr(sender, "hostname", None) or "celery").part(
        "schedules", SchedulerPart.start
    )
