"""The job service: what front doors do with agent jobs (enqueue, get, list, cancel, wait).

A job is an asyncio task of the server process, in a context of its own (as chat runs are),
driving a kit ``AgentQueue`` of its own over the database store: each job has its own
retries and partial policy, and the process bounds how many run at once. The row is written
before anything is answered, held by this process (``owner``) and kept alive by a heartbeat;
the queue then ``restore()``s it from the store. A process that starts up (its first use of
the service, or ``restore_jobs()`` from the ASGI startup) takes over the open jobs of
processes whose heartbeat stopped and runs them again; it never touches a live process's.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from orkestrel.core import (
    AgentJobError,
    AgentJobInput,
    AgentQueue,
    AgentResult,
    create_agent_queue,
    validate_job,
)
from orkestrel.db import in_thread, parse_id
from orkestrel.protocol import result_payload

from ..models import AgentJob, AgentProfile
from .records import (
    JobSettled,
    JobSpec,
    Outcome,
    beat,
    create_job,
    finish_job,
    get_job,
    others_open,
    owned_job,
    request_cancel,
    start_job,
)
from .registry import ProfileRegistry
from .store import DatabaseQueueStore

__all__ = [
    "CONCURRENCY",
    "HEARTBEAT_SECONDS",
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
HEARTBEAT_SECONDS = 2.0
STALE_SECONDS = 10.0
# Jobs running at once in one process (``ORKESTREL["JOB_CONCURRENCY"]``); the others wait.
CONCURRENCY = 4
# How often ``wait`` looks at a job another process runs.
POLL_SECONDS = 0.25
Status = AgentJob.Status


def spawn[T](work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task in a context of its own: its database hops go to the shared database thread,
    not to the thread of the request that started it (which it outlives)."""
    return asyncio.get_running_loop().create_task(work, context=contextvars.Context())


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRequest:
    """What a user asks a job to do: a profile, input messages, a system prompt, options.

    ``None`` options take the profile's own; ``system`` follows the profile's prompt.
    """

    profile: AgentProfile
    messages: Sequence[Mapping[str, str]]
    system: str | None = None
    limit: int | None = None
    timeout: float | None = None
    budget: int | None = None
    allow_partial: bool = False
    retries: int = 0

    def job(self) -> AgentJobInput:
        """The kit's job: the profile as provider, and only what the user gave."""
        job: AgentJobInput = {
            "provider": self.profile.slug,
            "messages": [{"role": m["role"], "content": m["content"]} for m in self.messages],
        }
        if self.system:
            job["system"] = self.system
        if self.limit is not None:
            job["limit"] = self.limit
        if self.timeout is not None:
            job["timeout"] = float(self.timeout)
        if self.budget is not None:
            job["budget"] = self.budget
        return validate_job(job)


def outcome_of(value: AgentResult | BaseException, *, cancelled: bool) -> Outcome:
    """How a job ended, from what its queue answered and whether a cancel was asked for."""
    if isinstance(value, AgentResult):
        if cancelled and value.stop == "abort":
            return Outcome(Status.CANCELLED, result_payload(value))
        return Outcome(Status.PARTIAL if value.partial else Status.DONE, result_payload(value))
    partial = result_payload(value.partial) if isinstance(value, AgentJobError) else None
    if cancelled:
        return Outcome(Status.CANCELLED, partial)
    code = getattr(value, "code", None)
    return Outcome(
        Status.ERROR,
        partial,
        error_code=code.lower() if isinstance(code, str) else "job_failed",
        error=(str(value) or type(value).__name__)[:2000],
    )


@dataclass
class LiveJob:
    """A job this process holds: its task, its queue once started, whether it was cancelled."""

    task: asyncio.Task[None] | None = None
    queue: AgentQueue | None = None
    cancelled: bool = False

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


class JobService:
    """Enqueue, get, list, cancel and wait for agent jobs; restore those dead processes left.

    ``owner`` names this process on the rows it holds (one service per process); tests make
    more to play several processes.
    """

    def __init__(
        self,
        *,
        owner: str | None = None,
        heartbeat: float = HEARTBEAT_SECONDS,
        stale: float = STALE_SECONDS,
        concurrency: int | None = None,
    ) -> None:
        self.owner = owner or _owner_id()
        self.heartbeat = heartbeat
        self.stale = stale
        self.concurrency = concurrency
        self.store = DatabaseQueueStore(self.owner, stale=stale)
        self._state: LoopState | None = None

    # -- front doors --------------------------------------------------------------------------

    async def enqueue(self, *, user_id: int, request: JobRequest) -> AgentJob:
        """Store the job durably (held by this process), then start it; the stored row."""
        row = await in_thread(create_job)(
            user_id=user_id,
            profile=request.profile,
            job=request.job(),
            retries=request.retries,
            allow_partial=request.allow_partial,
            owner=self.owner,
        )
        self._begin()
        self._start(str(row.pk))
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

        Returns the ids started. A job a live process holds is left alone.
        """
        records = await self.store.list()
        return [record.id for record in records if self._start(record.id)]

    async def recover(self) -> list[str]:
        """``restore`` now, then again while other processes hold open jobs (they may be
        dead but not stale yet: a server restarted within ``stale`` seconds)."""
        started = await self.restore()
        self._begin(first=False)
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

    def _begin(self, *, first: bool = True) -> None:
        """The process's first use of the service starts recovery (once per loop)."""
        state = self._loop_state()
        if state.sweeper is None:
            state.sweeper = spawn(self._sweep(first))

    async def _sweep(self, first: bool) -> None:
        while True:
            if first:
                try:
                    await self.restore()
                except Exception:  # noqa: BLE001 - recovery retries on the next pass
                    logger.warning("restoring agent jobs failed", exc_info=True)
            first = True
            try:
                if not await in_thread(others_open)(self.owner):
                    return
            except Exception:  # noqa: BLE001 - as above
                logger.warning("looking for other processes' jobs failed", exc_info=True)
            await asyncio.sleep(self.stale / 2)

    def _start(self, job_id: str) -> bool:
        """Run ``job_id`` here unless it runs here already (decided without awaiting)."""
        state = self._loop_state()
        if job_id in state.live:
            return False
        live = state.live[job_id] = LiveJob()
        live.task = spawn(self._execute(state, job_id, live))
        if state.heartbeat is None or state.heartbeat.done():
            state.heartbeat = spawn(self._beat(state))
        return True

    async def _beat(self, state: LoopState) -> None:
        """Keep the held jobs alive; stop those cancelled through another process."""
        while state.live:
            await asyncio.sleep(self.heartbeat)
            try:
                cancelled = await in_thread(beat)(self.owner)
            except Exception:  # noqa: BLE001 - the next beat tries again
                logger.warning("agent job heartbeat failed", exc_info=True)
                continue
            for job_id in cancelled:
                live = state.live.get(job_id)
                if live is not None and not live.cancelled:
                    live.abort()

    async def _execute(self, state: LoopState, job_id: str, live: LiveJob) -> None:
        try:
            async with state.slots:
                spec = await in_thread(start_job)(job_id, self.owner)
                if not isinstance(spec, JobSpec):
                    return
                outcome = await self._run(spec, live)
                await in_thread(finish_job)(job_id, self.owner, outcome)
        except Exception:
            # The row stays open: the next process start runs the job again.
            logger.exception("agent job %s could not be run", job_id)
        finally:
            if state.live.get(job_id) is live:
                del state.live[job_id]

    async def _run(self, spec: JobSpec, live: LiveJob) -> Outcome:
        try:
            registry = ProfileRegistry(spec)
        except Exception as error:  # noqa: BLE001 - a misconfigured endpoint fails the job
            return outcome_of(error, cancelled=False)
        queue = create_agent_queue(
            registry=registry,
            retries=spec.retries,
            allow_partial=spec.allow_partial,
            store=self.store.holding(spec.record),
        )
        if live.cancelled:
            return Outcome(Status.CANCELLED)
        # From here to the queue's run there is no await: a cancel reaches the run's signal.
        live.queue = queue
        outcomes = await queue.restore()
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
    return await job_service.recover()
