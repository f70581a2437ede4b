"""A durable, bounded-concurrency, retrying queue of agent jobs."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Required, TypedDict, Unpack, runtime_checkable

from .abort import Abort, AbortSignal
from .chunks import AgentResult
from .jobs import AgentJobInput, settle_agent_job, validate_job
from .messages import mint_id
from .registry import AgentRegistry

__all__ = [
    "AgentQueue",
    "MemoryQueueStore",
    "QueueRecord",
    "QueueStore",
    "create_agent_queue",
    "create_memory_queue_store",
]


@dataclass(frozen=True, slots=True)
class QueueRecord:
    """One outstanding job as persisted: its id, the job, and attempts so far."""

    id: str
    job: Mapping[str, Any]
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "job": copy.deepcopy(dict(self.job)), "attempts": self.attempts}


@runtime_checkable
class QueueStore(Protocol):
    """Where outstanding jobs live until they settle (so ``restore`` can re-run them)."""

    async def set(self, record: QueueRecord) -> None: ...
    async def delete(self, id: str) -> None: ...
    async def list(self) -> list[QueueRecord]: ...


class MemoryQueueStore:
    """A process-lifetime ``QueueStore``."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

    async def set(self, record: QueueRecord) -> None:
        self._records[record.id] = record.to_dict()

    async def delete(self, id: str) -> None:
        self._records.pop(id, None)

    async def list(self) -> list[QueueRecord]:
        return [
            QueueRecord(data["id"], copy.deepcopy(data["job"]), data["attempts"])
            for data in self._records.values()
        ]


def create_memory_queue_store() -> MemoryQueueStore:
    """Create an in-memory ``QueueStore``."""
    return MemoryQueueStore()


class QueueOptions(TypedDict, total=False):
    """The keyword options of ``AgentQueue`` / ``create_agent_queue``."""

    registry: Required[AgentRegistry]
    concurrency: int
    retries: int
    timeout: float | None
    store: QueueStore | None
    allow_partial: bool


class AgentQueue:
    """Runs jobs through the registry with bounded concurrency, retries and a store."""

    def __init__(
        self,
        *,
        registry: AgentRegistry,
        concurrency: int = 1,
        retries: int = 0,
        timeout: float | None = None,
        store: QueueStore | None = None,
        allow_partial: bool = False,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, not {concurrency!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a non-negative integer, not {retries!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self.registry = registry
        self.concurrency = concurrency
        self.retries = retries
        self.timeout = timeout
        self.store = store
        self.allow_partial = allow_partial
        self._slots = asyncio.Semaphore(concurrency)
        self._abort = Abort()
        self._running: set[str] = set()

    @property
    def running(self) -> int:
        """Jobs currently holding a slot."""
        return self.concurrency - self._slots._value

    async def enqueue(self, job: AgentJobInput) -> AgentResult:
        """Persist ``job``, run it (retrying on failure), and return its result."""
        validate_job(job)
        record = QueueRecord(mint_id(), copy.deepcopy(dict(job)))
        if self.store is not None:
            await self.store.set(record)
        return await self._run(record)

    async def restore(self) -> list[AgentResult | BaseException]:
        """Re-run every outstanding stored job not already running here."""
        if self.store is None:
            return []
        records = [r for r in await self.store.list() if r.id not in self._running]
        return await asyncio.gather(*(self._run(r) for r in records), return_exceptions=True)

    def abort(self, reason: object = None) -> None:
        """Cancel every running and waiting job (later enqueues run normally)."""
        abort, self._abort = self._abort, Abort()
        abort.abort(reason)

    async def _run(self, record: QueueRecord) -> AgentResult:
        self._running.add(record.id)
        abort_signal = self._abort.signal
        attempts = record.attempts
        try:
            while True:
                attempts += 1
                try:
                    result = await self._attempt(record, abort_signal)
                except Exception:
                    if attempts > self.retries or abort_signal.aborted:
                        raise
                    if self.store is not None:
                        await self.store.set(QueueRecord(record.id, record.job, attempts))
                    continue
                if self.store is not None:
                    await self.store.delete(record.id)
                return result
        except Exception:
            if self.store is not None:
                await self.store.delete(record.id)
            raise
        finally:
            self._running.discard(record.id)

    async def _attempt(self, record: QueueRecord, queue_signal: AbortSignal) -> AgentResult:
        async with self._slots:
            deadline = AbortSignal.timeout(self.timeout) if self.timeout is not None else None
            signal = AbortSignal.any([queue_signal, deadline])
            try:
                agent = self.registry.build(record.job, signal)
                return await settle_agent_job(agent, allow_partial=self.allow_partial)
            finally:
                signal.dispose()
                if deadline is not None:
                    deadline.dispose()


def create_agent_queue(**options: Unpack[QueueOptions]) -> AgentQueue:
    """Create an ``AgentQueue`` (``registry`` required; see ``AgentQueue``)."""
    return AgentQueue(**options)
