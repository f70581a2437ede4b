"""The kit's ``QueueStore`` over ``AgentJob`` rows, as one server process sees them.

Rows are created by the job service (a job needs a user and a profile, which a
``QueueRecord`` does not carry), so ``set`` only records a retry's attempts on a row the
process holds. ``list`` is where restarts are survived: it takes over the open jobs of
processes whose heartbeat stopped and answers every open job this process holds. ``delete``
keeps the row: a settled job is history, and the service stores its outcome right after (a
crash in between leaves the job open, so it runs again: at least once).
"""

from __future__ import annotations

from orkestrel.core import QueueRecord
from orkestrel.db import in_thread

from .records import claim_jobs, save_attempts

__all__ = ["DatabaseQueueStore", "HeldJobStore"]


class DatabaseQueueStore:
    """The open jobs ``owner`` holds, and those it may take over (older than ``stale`` s)."""

    def __init__(self, owner: str, *, stale: float) -> None:
        self.owner = owner
        self.stale = stale

    async def set(self, record: QueueRecord) -> None:
        """Record that ``record.attempts`` attempts failed and the next one starts.

        Raises ``LookupError`` for a job this process does not hold open (never stored here,
        settled, or taken over by another process): the queue then stops retrying it.
        """
        if not await in_thread(save_attempts)(record.id, self.owner, record.attempts):
            raise LookupError(f"job {record.id!r} is not held by this process")

    async def delete(self, id: str) -> None:
        """Nothing to do: the service stores the settled job's outcome (see the module)."""

    async def list(self) -> list[QueueRecord]:
        """Claim the orphaned open jobs, then answer every open job this process holds."""
        return await in_thread(claim_jobs)(self.owner, self.stale)

    def holding(self, record: QueueRecord) -> HeldJobStore:
        """This store narrowed to one job the process has just started."""
        return HeldJobStore(self, record)


class HeldJobStore:
    """One started job's view of the store: a queue over it restores exactly that job.

    The service runs every job through a queue of its own (each job has its own retries and
    partial policy) and starts it with ``restore()``, which lists only ``record``.
    """

    def __init__(self, store: DatabaseQueueStore, record: QueueRecord) -> None:
        self._store = store
        self._record = record

    async def set(self, record: QueueRecord) -> None:
        await self._store.set(record)

    async def delete(self, id: str) -> None:
        await self._store.delete(id)

    async def list(self) -> list[QueueRecord]:
        return [self._record]
