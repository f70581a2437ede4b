"""The Celery side of agent jobs: the task that runs one job by id on a worker.

A worker process runs every job it takes on one asyncio event loop, in a thread of its own
(``WorkerLoop``): jobs wait on model servers, not on the CPU, so one loop carries many of
them, with one heartbeat for all, the shared database thread and pooled HTTP clients. The
pool's threads (``CELERY_WORKER_POOL = "threads"``) each hand a message's job to that loop and
block until it has settled, so the message is acknowledged only then (``acks_late``): a
worker lost mid-job leaves its message to the broker and its job's lease to expire.

The loop also sweeps (``JobService.sweep``): every half staleness it frees the jobs of lost
workers and sends them again, whichever worker or process had them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections.abc import Coroutine
from typing import Any

from celery import Task
from celery.signals import worker_ready, worker_shutdown

from orkestrel.celery import app

from .service import RUN_JOB, JobService, spawn

__all__ = ["WorkerLoop", "run_job", "worker_loop"]

logger = logging.getLogger(__name__)

# The service's own bound on jobs at once: none to speak of, the pool's threads bound them.
UNBOUNDED = 1_000_000


class WorkerLoop:
    """A worker process's event loop for its jobs, running in a daemon thread.

    ``owner`` names the worker on the rows it holds: its Celery node name, pid and a nonce.
    """

    def __init__(self, node: str) -> None:
        self.pid = os.getpid()
        owner = f"{node[:40]}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self.service = JobService(owner=owner, workers=True, concurrency=UNBOUNDED)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="orkestrel-jobs", daemon=True
        )
        self._thread.start()
        self._sweeper = self.call(self._start_sweeping())

    def call[T](self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop and wait for its result (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    def stop(self) -> None:
        """Stop the sweep and the jobs still running (they stay open, for other workers)."""
        self.call(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    async def _start_sweeping(self) -> asyncio.Task[None]:
        return spawn(self.service.sweep())

    async def _stop(self) -> None:
        self._sweeper.cancel()
        await asyncio.gather(self._sweeper, return_exceptions=True)
        await self.service.shutdown()


_worker: WorkerLoop | None = None
_worker_lock = threading.Lock()


def worker_loop(node: str) -> WorkerLoop:
    """This process's ``WorkerLoop``, started at the first call (``node``: the worker's name).

    A process forked from one that had a loop (the ``prefork`` pool) starts its own: the
    parent's loop thread did not come along.
    """
    global _worker
    with _worker_lock:
        if _worker is None or _worker.pid != os.getpid():
            _worker = WorkerLoop(node)
        return _worker


@app.task(name=RUN_JOB, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_job(self: Task, job_id: str) -> str:
    """Run the agent job ``job_id`` here, unless it has settled or another worker holds it.

    Idempotent by id: a message for a settled job, or for one another live worker holds,
    does nothing (a lost holder's job is sent again once its lease expires).
    """
    worker = worker_loop(self.request.hostname or "celery")
    verdict = worker.call(worker.service.run_here(job_id))
    logger.info("agent job %s: %s", job_id, verdict)
    return verdict


@worker_ready.connect
def _start_at_once(sender: Any = None, **_: Any) -> None:
    # Sweep from the start (``sender`` is the worker's consumer): a worker started after
    # another was lost takes its jobs over even before a message reaches it.
    worker_loop(getattr(sender, "hostname", None) or "celery")


@worker_shutdown.connect
def _stop(**_: Any) -> None:
    global _worker
    with _worker_lock:
        worker, _worker = _worker, None
    if worker is not None:
        worker.stop()
