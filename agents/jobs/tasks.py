"""The Celery side of agent jobs: the task that runs one job by id on a worker.

A worker process runs every job it takes on its one event loop (``orkestrel.celery``'s
``WorkerLoop``, shared with chat runs), through this module's part of it (``JobWorker``): one
job service, whose heartbeat keeps every held job alive. Each pool thread hands a message's job
to the loop and blocks until it has settled, so the message is acknowledged only then
(``acks_late``): a worker lost mid-job leaves its message to the broker and its job's lease to
expire.

The part also sweeps (``JobService.sweep``): every half staleness it frees the jobs of lost
workers and sends them again, whichever worker or process had them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from celery import Task
from celery.signals import worker_ready, worker_shutdown

from orkestrel.celery import WorkerLoop, app, stop_worker_loop, worker_loop
from orkestrel.telemetry.propagation import message_carrier, within

from .service import RUN_JOB, JobService, spawn

__all__ = ["JobWorker", "job_worker", "run_job"]

logger = logging.getLogger(__name__)

# The service's own bound on jobs at once: none to speak of, the pool's threads bound them.
UNBOUNDED = 1_000_000


class JobWorker:
    """The jobs' part of a worker loop: a job service holding rows as the worker, and its
    sweep."""

    def __init__(self, owner: str) -> None:
        self.service = JobService(owner=owner, workers=True, concurrency=UNBOUNDED)
        self._sweeper: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, worker: WorkerLoop) -> JobWorker:
        """Made on the loop: the sweep starts at once."""
        part = cls(worker.owner)
        part._sweeper = spawn(part.service.sweep())
        return part

    async def stop(self) -> None:
        """Stop the sweep and the jobs still running (they stay open, for other workers)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        await self.service.shutdown()


def job_worker(node: str) -> JobWorker:
    """This worker process's ``JobWorker`` (``node``: the worker's name)."""
    return worker_loop(node).part("jobs", JobWorker.start)


@app.task(name=RUN_JOB, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_job(self: Task, job_id: str) -> str:
    """Run the agent job ``job_id`` here, unless it has settled or another worker holds it.

    Idempotent by id: a message for a settled job, or for one another live worker holds,
    does nothing (a lost holder's job is sent again once its lease expires).
    """
    node = self.request.hostname or "celery"
    part = job_worker(node)
    # In the trace that enqueued it, when traces are on.
    carrier = message_carrier(self.request)
    verdict = worker_loop(node).call(within(carrier, part.service.run_here(job_id)))
    logger.info("agent job %s: %s", job_id, verdict)
    return verdict


@worker_ready.connect
def _start_at_once(sender: Any = None, **_: Any) -> None:
    # Sweep from the start (``sender`` is the worker's consumer): a worker started after
    # another was lost takes its jobs over even before a message reaches it.
    job_worker(getattr(sender, "hostname", None) or "celery")


@worker_shutdown.connect
def _stop(**_: Any) -> None:
    stop_worker_loop()
