"""The job service: what front doors do with agent jobs (enqueue, get, list, cancel, wait).

A job is an asyncio task of the process that runs it, in a context of its own (as chat runs
are), driving a kit ``AgentQueue`` of its own over the database store: each job has its own
retries and partial policy, and the process bounds how many run at once. The row is written
before anything is answered, held by the process running it (``owner``) and kept alive by a
heartbeat; the queue then ``restore()``s it from the store.

Where jobs run is ``ORKESTREL["JOBS_ON"]``. In ``"process"`` (no broker) the web process that
took the job runs it; a process that starts up (its first use of the service, or
``restore_jobs()`` from the ASGI startup) takes over the open jobs of processes whose
heartbeat stopped and runs them again; it never touches a live process's. In ``"workers"``
the row is stored held by no one and its id sent to the broker (``RUN_JOB``); a Celery
worker's task claims it and runs it here, with ``run_here`` (``agents.jobs.tasks``), and the
jobs of lost workers are sent again once their lease expires (``redispatch``).

Operators' requests reach jobs through the database (``AgentJob.objects.request_cancel`` and
``retry``): a holder stops a job cancelled there at its next heartbeat; a retried job, held by
no one, is sent again by the workers' sweep, or taken by the server process's sweep (which,
started by ``restore_jobs``, keeps watching). A job a ``delegate`` call started (``depth`` >
0) runs beside the process's bound: its parent holds a slot while it waits for it.

A running job's progress (``agents.runtime.progress``) is counted in memory and stored with
the heartbeat (only the jobs that moved since the last beat), and once more as it settles:
the row, which anyone may read, lags the job by at most one heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.db.models import QuerySet

from orkestrel.celery import app as celery_app
from orkestrel.core import (
    AgentQueue,
    create_agent_queue,
)
from orkestrel.db import in_thread, parse_id
from orkestrel.request_scope import bind_run, context_of_its_own
from orkestrel.telemetry.propagation import outgoing

from ..models import AgentJob
from ..runtime.progress import ProgressMeter, ProgressPayload
from ..usage.charge import current_key
from ..usage.enforcement import enforce
from .accounting import settle_job
from .delegation import JobDelegator, Parent
from .records import (
    Claim,
    JobRequest,
    JobSettled,
    JobSpec,
    Outcome,
    beat,
    cancel_job,
    claim_job,
    create_job,
    expire_leases,
    get_job,
    others_open,
    outcome_of,
    owned_job,
    request_cancel,
    start_job,
    undelivered,
)
from .registry import ProfileRegistry
from .store import DatabaseQueueStore

__all__ = [
    "CONCURRENCY",
    "HEARTBEAT_SECONDS",
    "RUN_JOB",
    "STALE_SECONDS",
    "JobRequest",
    "JobService",
    "JobSettled",
    "job_service",
    "restore_jobs",
]

logger = logging.getLogger(__name__)

# A holder beats this often; a job whose heartbeat is older than ``STALE_SECONDS`` is an
# orphan any process may take over (a few missed beats: a busy database thread is not death).
# ``ORKESTREL["JOB_HEARTBEAT_SECONDS"]`` and ``["JOB_STALE_SECONDS"]`` change them.
HEARTBEAT_SECONDS = 2.0
STALE_SECONDS = 10.0
# The Celery task that runs one job by id (``agents.jobs.tasks``), sent by name.
RUN_JOB = "agents.jobs.run_job"
# Jobs running at once in one process (``ORKESTREL["JOB_CONCURRENCY"]``); the others wait.
CONCURRENCY = 4
# How often ``wait`` looks at a job another process runs.
POLL_SECONDS = 0.25
Status = AgentJob.Status


def spawn[T](work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task in a context of its own: its database hops go to the shared database thread,
    not to the thread of the request that started it (which it outlives). Only the request's
    id and trace go on in it (``context_of_its_own``)."""
    return asyncio.get_running_loop().create_task(work, context=context_of_its_own())


@dataclass
class LiveJob:
    """A job this process holds: its task, its queue once started, whether it was cancelled,
    whether it is a delegated child (not bounded by the process's slots), and its progress
    (``stored``: the meter's version the row has)."""

    task: asyncio.Task[None] | None = None
    queue: AgentQueue | None = None
    cancelled: bool = False
    child: bool = False
    meter: ProgressMeter = field(default_factory=ProgressMeter)
    stored: int = 0

    def abort(self) -> None:
        self.cancelled = True
        if self.queue is not None:
            self.queue.abort("cancelled")


@dataclass
class LoopState:
    """The service's live side on one event loop (the server has one; tests one per test)."""

    loop: asyncio.AbstractEventLoop
    slots: asyncio.Semaphore
    live: dict[str, LiveJob] = field(default_factory=dict)
    heartbeat: asyncio.Task[None] | None = None
    sweeper: asyncio.Task[None] | None = None


def _owner_id() -> str:
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _option(name: str, default: float) -> float:
    return float(getattr(settings, "ORKESTREL", {}).get(name, default))


def publish(job_ids: Sequence[str]) -> list[str]:
    """Send each job to the broker (the task's id is the job's); the ids that failed."""
    failed: list[str] = []
    for job_id in job_ids:
        try:
            # The trace that enqueued the job goes with it (``traceparent``; none when off).
            celery_app.send_task(RUN_JOB, args=[job_id], task_id=job_id, headers=outgoing())
        except Exception:  # noqa: BLE001 - the job stays queued; the next expiry resends it
            logger.warning("could not send agent job %s to the broker", job_id, exc_info=True)
            failed.append(job_id)
    return failed


class JobService:
    """Enqueue, get, list, cancel and wait for agent jobs; restore those dead processes left.

    ``owner`` names this process on the rows it holds (one service per process); tests make
    more to play several processes. ``workers`` says whether jobs go to Celery workers
    (``None``: ``ORKESTREL["JOBS_ON"]`` decides, at each use); ``heartbeat`` and ``stale``
    default to ``ORKESTREL["JOB_HEARTBEAT_SECONDS"]`` and ``["JOB_STALE_SECONDS"]``.
    """

    def __init__(
        self,
        *,
        owner: str | None = None,
        heartbeat: float | None = None,
        stale: float | None = None,
        concurrency: int | None = None,
        workers: bool | None = None,
    ) -> None:
        self.owner = owner or _owner_id()
        self.heartbeat = heartbeat or _option("JOB_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS)
        self.stale = stale or _option("JOB_STALE_SECONDS", STALE_SECONDS)
        self.concurrency = concurrency
        self.store = DatabaseQueueStore(self.owner, stale=self.stale)
        self._workers = workers
        self._state: LoopState | None = None

    @property
    def on_workers(self) -> bool:
        """Whether jobs are sent to Celery workers rather than run in this process."""
        if self._workers is not None:
            return self._workers
        return getattr(settings, "ORKESTREL", {}).get("JOBS_ON") == "workers"

    # -- front doors --------------------------------------------------------------------------

    async def enqueue(self, *, user_id: int, request: JobRequest) -> AgentJob:
        """Store the job durably, then start it here or send it to the workers; the row.

        Here, the row is held by this process from the start. For workers it is held by no
        one until a worker claims it; a job the broker refused is sent again later.
        """
        workers = self.on_workers
        key = current_key()
        if request.parent is None:
            # A job someone enqueues is held to their quotas (``QuotaExceeded``); a delegated
            # one is part of its parent's work, which was.
            await in_thread(enforce)(user_id, key)
        row = await in_thread(create_job)(
            user_id=user_id,
            profile=request.profile,
            job=request.job(),
            retries=request.retries,
            allow_partial=request.allow_partial,
            owner="" if workers else self.owner,
            parent=request.parent,
            depth=request.depth,
            key=key,
        )
        if workers:
            await self._dispatch([str(row.pk)])
            return row
        self._begin()
        self._start(str(row.pk), child=request.depth > 0)
        return row

    async def get(self, *, user_id: int, job_id: str) -> AgentJob:
        """The user's job (``LookupError`` if absent or someone else's)."""
        self._begin()
        row = await in_thread(owned_job)(user_id, _key(job_id))
        if row is None:
            raise LookupError(f"no job {job_id!r}")
        return row

    async def jobs(self, *, user_id: int) -> QuerySet[AgentJob]:
        """The user's jobs, newest first (a lazy queryset: the caller pages it)."""
        self._begin()
        return AgentJob.objects.filter(user_id=user_id).select_related("profile")

    async def cancel(self, *, user_id: int, job_id: str) -> AgentJob:
        """Cancel the user's job: queued, at once; running, once its holder stops it.

        Raises ``LookupError`` (absent or someone else's) or ``JobSettled``.
        """
        self._begin()
        row = await in_thread(request_cancel)(user_id, _key(job_id))
        if row.status == Status.RUNNING:
            live = self._loop_state().live.get(str(row.pk))
            if live is not None:
                live.abort()
        return row

    async def stop(self, job_id: str) -> None:
        """Cancel a job and its descendants, whoever's (a parent's delegate call stopped)."""
        await in_thread(cancel_job)(_key(job_id))
        live = self._loop_state().live.get(job_id)
        if live is not None:
            live.abort()

    async def wait(self, job_id: str) -> AgentJob:
        """Wait until the job has settled (wherever it runs); the settled row."""
        live = self._loop_state().live.get(job_id)
        if live is not None and live.task is not None:
            await asyncio.gather(asyncio.shield(live.task), return_exceptions=True)
        while True:
            row = await in_thread(get_job)(_key(job_id))
            if row is None:
                raise LookupError(f"no job {job_id!r}")
            if row.settled:
                return row
            await asyncio.sleep(POLL_SECONDS)

    # -- restoring ----------------------------------------------------------------------------

    async def restore(self) -> list[str]:
        """Take over the open jobs of dead processes and run every held job not running here.

        Returns the ids started (for workers: sent again). A job a live process holds is
        left alone.
        """
        if self.on_workers:
            return await self.redispatch()
        records = await self.store.list()
        return [record.id for record in records if self._start(record.id)]

    # -- on workers ---------------------------------------------------------------------------

    async def run_here(self, job_id: str) -> Claim | Literal["ran"]:
        """Claim the job sent to workers and run it in this process until it settles.

        What a worker's task does with a message: ``"ran"`` once the job has settled here
        (or was stopped here: its lease was lost, or the process is shutting down); else why
        there was nothing to run (``claim_job``; ``"held"`` too for a second message of a job
        this process runs). Never raises for the job's own failure.
        """
        state = self._loop_state()
        if job_id in state.live:
            return "held"  # a second message for a job this process runs already
        claim = await in_thread(claim_job)(_key(job_id), self.owner)
        if claim != "claimed" or not self._start(job_id):
            return claim
        task = state.live[job_id].task
        if task is not None:
            await asyncio.gather(asyncio.shield(task), return_exceptions=True)
        return "ran"

    async def redispatch(self) -> list[str]:
        """Send again the jobs whose holder's lease expired (or whose message was lost)."""
        job_ids = await in_thread(expire_leases)(self.stale)
        if job_ids:
            await self._dispatch(job_ids)
        return job_ids

    async def sweep(self) -> None:
        """``redispatch`` every half staleness, for as long as the worker runs."""
        while True:
            await self._expire()
            await asyncio.sleep(self.stale / 2)

    async def _expire(self) -> None:
        try:
            await self.redispatch()
        except Exception:  # noqa: BLE001 - the next pass tries again
            logger.warning("expiring agent job leases failed", exc_info=True)

    async def _dispatch(self, job_ids: list[str]) -> None:
        # The broker's client blocks: in a thread of its own, not the database thread.
        failed = await asyncio.to_thread(publish, job_ids)
        if failed:
            await in_thread(undelivered)(failed)

    async def recover(self, *, watch: bool = False) -> list[str]:
        """``restore`` now, then again while other processes hold open jobs (they may be
        dead but not stale yet: a server restarted within ``stale`` seconds); with ``watch``,
        for as long as the loop runs (jobs an operator retried are held by no one)."""
        started = await self.restore()
        self._begin(first=False, watch=watch)
        return started

    async def shutdown(self) -> None:
        """Stop this loop's jobs and chores; the jobs stay open and are restored later."""
        state = self._state
        if state is None or state.loop is not asyncio.get_running_loop():
            return
        tasks = [state.heartbeat, state.sweeper, *(live.task for live in state.live.values())]
        pending = [task for task in tasks if task is not None and not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._state = None

    # -- the live side ------------------------------------------------------------------------

    def _loop_state(self) -> LoopState:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop is not loop:
            concurrency = self.concurrency or getattr(settings, "ORKESTREL", {}).get(
                "JOB_CONCURRENCY", CONCURRENCY
            )
            state = self._state = LoopState(loop, asyncio.Semaphore(concurrency))
        return state

    def _begin(self, *, first: bool = True, watch: bool = False) -> None:
        """The process's first use of the service starts recovery (once per loop)."""
        state = self._loop_state()
        if state.sweeper is None or (watch and state.sweeper.done()):
            state.sweeper = spawn(self._sweep(first, watch))

    async def _sweep(self, first: bool, watch: bool = False) -> None:
        if self.on_workers:
            # Once, at the first use: the workers' own sweeps go on (``sweep``).
            if first:
                await self._expire()
            return
        while True:
            if first:
                try:
                    await self.restore()
                except Exception:  # noqa: BLE001 - recovery retries on the next pass
                    logger.warning("restoring agent jobs failed", exc_info=True)
            first = True
            try:
                if not await in_thread(others_open)(self.owner):
                    if not watch:
                        return
                    first = False
            except Exception:  # noqa: BLE001 - as above
                logger.warning("looking for other processes' jobs failed", exc_info=True)
            await asyncio.sleep(self.stale / 2)

    def _start(self, job_id: str, *, child: bool = False) -> bool:
        """Run ``job_id`` here unless it runs here already (decided without awaiting)."""
        state = self._loop_state()
        if job_id in state.live:
            return False
        live = state.live[job_id] = LiveJob(child=child)
        live.task = spawn(self._execute(state, job_id, live))
        if state.heartbeat is None or state.heartbeat.done():
            state.heartbeat = spawn(self._beat(state))
        return True

    async def _beat(self, state: LoopState) -> None:
        """Keep the held jobs alive; stop those cancelled through another process, and those
        another process took over (this one's beats were late: it must not run them too)."""
        while state.live:
            await asyncio.sleep(self.heartbeat)
            # Only jobs started before the beat: each was held when it started.
            held = dict(state.live)
            # With the progress of those that moved since the last beat's write.
            moved = {job_id: job.meter.version for job_id, job in held.items()}
            progress: dict[str, ProgressPayload] = {
                job_id: held[job_id].meter.progress.payload()
                for job_id, version in moved.items()
                if version != held[job_id].stored
            }
            try:
                found = await in_thread(beat)(self.owner, list(held), progress)
            except Exception:  # noqa: BLE001 - the next beat tries again
                logger.warning("agent job heartbeat failed", exc_info=True)
                continue
            for job_id in progress:
                held[job_id].stored = moved[job_id]
            for job_id in found.cancelled | found.lost:
                live = state.live.get(job_id)
                if live is not None and not live.cancelled:
                    if job_id in found.lost:
                        logger.warning("agent job %s was taken over: stopping it here", job_id)
                    live.abort()

    async def _execute(self, state: LoopState, job_id: str, live: LiveJob) -> None:
        # Every line this job's task logs names it (its id stands for a conversation).
        bind_run(None, job_id)
        # A child waits for no slot: its parent holds one while it waits for the child.
        slot: AbstractAsyncContextManager[object] = nullcontext() if live.child else state.slots
        try:
            async with slot:
                spec = await in_thread(start_job)(job_id, self.owner)
                if not isinstance(spec, JobSpec):
                    return
                began = time.monotonic()
                outcome = await self._run(spec, live)
                last = live.meter.progress.payload() if live.meter.version else None
                elapsed = int((time.monotonic() - began) * 1000)
                # Priced, and written to the usage ledger, with its settle.
                await in_thread(settle_job)(spec, self.owner, outcome, last, elapsed)
        except Exception:
            # The row stays open: the next process start runs the job again.
            logger.exception("agent job %s could not be run", job_id)
        finally:
            if state.live.get(job_id) is live:
                del state.live[job_id]

    async def _run(self, spec: JobSpec, live: LiveJob) -> Outcome:
        try:
            registry = ProfileRegistry(
                spec, delegator=JobDelegator(self, Parent.of_job(spec)), meter=live.meter
            )
        except Exception as error:  # noqa: BLE001 - a misconfigured endpoint fails the job
            return outcome_of(error, cancelled=False)
        queue = create_agent_queue(
            registry=registry,
            retries=spec.retries,
            allow_partial=spec.allow_partial,
            store=self.store.holding(spec.record),
        )
        # The profile's MCP servers: opened before the job runs, closed once it settled.
        await registry.open()
        try:
            if live.cancelled:
                return Outcome(Status.CANCELLED)
            # From here to the queue's run there is no await: a cancel reaches the run's signal.
            live.queue = queue
            outcomes = await queue.restore()
        finally:
            await registry.close()
        if not outcomes:
            return Outcome(Status.ERROR, error_code="job_failed", error="the job did not run")
        outcome = outcomes[0]
        if isinstance(outcome, asyncio.CancelledError):
            raise outcome
        return outcome_of(outcome, cancelled=live.cancelled)


def _key(job_id: str) -> str:
    """A job id as stored; ``LookupError`` for anything that is not one."""
    if parse_id(job_id) is None:
        raise LookupError(f"no job {job_id!r}")
    return job_id


job_service = JobService()


async def restore_jobs() -> list[str]:
    """Run again the open jobs dead processes left (from the ASGI startup); the ids started."""
    return await job_service.recover(watch=True)
