"""A one-shot, ordered, fail-fast runner of agent jobs with sub-agent fan-out."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Required, TypedDict, Unpack

from .abort import Abort, AbortSignal
from .chunks import AgentResult
from .jobs import AgentJobInput, settle_agent_job, validate_job
from .registry import AgentRegistry

__all__ = ["AgentRunner", "RunnerController", "create_agent_runner"]


class RunnerController:
    """What a running job's handler gets: the run's ``signal`` and ``spawn`` for children."""

    __slots__ = ("_execution", "signal")

    def __init__(self, execution: _Execution, signal: AbortSignal) -> None:
        self._execution = execution
        self.signal = signal

    def spawn(self, job: AgentJobInput) -> None:
        """Run ``job`` as a sibling through the same bounded pool (never awaited inline)."""
        self._execution.schedule(job)


class _Execution:
    """One ``execute`` call: the bounded pool, the fail-fast abort, results in spawn order."""

    def __init__(self, runner: AgentRunner) -> None:
        self.runner = runner
        self.slots = asyncio.Semaphore(runner.concurrency)
        self.abort = Abort()
        self.tasks: list[asyncio.Task[AgentResult]] = []

    def schedule(self, job: AgentJobInput) -> None:
        validate_job(job)
        self.tasks.append(asyncio.ensure_future(self._unit(job)))

    async def _unit(self, job: AgentJobInput) -> AgentResult:
        attempts = 0
        while True:
            attempts += 1
            try:
                async with self.slots:
                    if self.abort.signal.aborted:
                        raise asyncio.CancelledError("runner aborted")
                    return await self._attempt(job)
            except Exception as error:
                if attempts > self.runner.retries or self.abort.signal.aborted:
                    # Fail fast: one failure cancels every sibling.
                    self.abort.abort(error)
                    raise

    async def _attempt(self, job: AgentJobInput) -> AgentResult:
        timeout = self.runner.timeout
        deadline = AbortSignal.timeout(timeout) if timeout is not None else None
        signal = AbortSignal.any([self.abort.signal, deadline])
        controller = RunnerController(self, signal)
        try:
            # Children first, fire-and-track: awaiting them here could deadlock the pool.
            for child in job.get("children") or []:
                controller.spawn(child)
            agent = self.runner.registry.build(job, signal)
            return await settle_agent_job(agent, allow_partial=self.runner.allow_partial)
        finally:
            signal.dispose()
            if deadline is not None:
                deadline.dispose()

    async def wait(self) -> list[AgentResult]:
        try:
            while True:
                pending = [task for task in self.tasks if not task.done()]
                if not pending:
                    break
                await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
                for task in self.tasks:
                    if task.done() and not task.cancelled():
                        error = task.exception()
                        if error is not None:
                            raise error
        except BaseException:
            self.abort.abort("runner failed")
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            raise
        return [task.result() for task in self.tasks]


class RunnerOptions(TypedDict, total=False):
    """The keyword options of ``AgentRunner`` / ``create_agent_runner``."""

    registry: Required[AgentRegistry]
    concurrency: int
    retries: int
    timeout: float | None
    allow_partial: bool


class AgentRunner:
    """Runs a batch of jobs once: results in order (declared, then spawned), fail-fast."""

    def __init__(
        self,
        *,
        registry: AgentRegistry,
        concurrency: int = 1,
        retries: int = 0,
        timeout: float | None = None,
        allow_partial: bool = False,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, not {concurrency!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a non-negative integer, not {retries!r}")
        self.registry = registry
        self.concurrency = concurrency
        self.retries = retries
        self.timeout = timeout
        self.allow_partial = allow_partial
        self._executions: set[_Execution] = set()

    async def execute(self, jobs: Sequence[AgentJobInput]) -> list[AgentResult]:
        """Run ``jobs`` (and any children they spawn); raise the first failure."""
        execution = _Execution(self)
        for job in jobs:
            validate_job(job)
        self._executions.add(execution)
        try:
            for job in jobs:
                execution.schedule(job)
            return await execution.wait()
        finally:
            self._executions.discard(execution)

    def abort(self, reason: object = None) -> None:
        """Cancel every running execution."""
        for execution in list(self._executions):
            execution.abort.abort(reason)


def create_agent_runner(**options: Unpack[RunnerOptions]) -> AgentRunner:
    """Create an ``AgentRunner`` (``registry`` required; see ``AgentRunner``)."""
    return AgentRunner(**options)
