"""Database work that arrives together shares one hop and one transaction (a group commit).

A burst of run starts is a burst of short transactions on the one database thread, each with
its own hop, ``BEGIN`` and ``COMMIT``, and each waiting in that thread's queue behind the
others. ``GroupCommit`` sends the work queued while a hop is in flight as the next hop: one
transaction, each piece in its own savepoint, so each is still accepted or refused on its
own (a refused piece leaves nothing stored) and all accepted ones are durable together. There
is no waiting window: a piece that finds the thread idle goes at the next turn of the loop,
with whatever else arrived in the same turn, so a lone start pays nothing for the batching.
Given ``Lanes`` (PostgreSQL), up to one batch per lane is in flight at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from django.db import transaction

from .db import Lanes, in_thread, under_sync_caller

__all__ = ["LIMIT", "GroupCommit"]

# Pieces in one transaction at most: a batch holds the write lock while it runs.
LIMIT: Final = 32


@dataclass(frozen=True, slots=True)
class _Piece:
    call: Callable[[], Any]
    context: contextvars.Context  # the caller's: its request scope, key and span go along
    future: asyncio.Future[Any]


Outcomes = list[tuple[bool, Any]]


def _together(pieces: list[_Piece]) -> Outcomes:
    """Run ``pieces`` on this thread; each outcome is ``(True, result)`` or ``(False, error)``."""
    if len(pieces) == 1:
        # Alone: exactly the work as written, its own transactions and all.
        piece = pieces[0]
        try:
            return [(True, piece.context.run(piece.call))]
        except Exception as error:  # noqa: BLE001 - raised again in its caller's task
            return [(False, error)]
    outcomes: Outcomes = []
    with transaction.atomic():
        for piece in pieces:
            try:
                with transaction.atomic():
                    outcomes.append((True, piece.context.run(piece.call)))
            except Exception as error:  # noqa: BLE001 - raised again in its caller's task
                outcomes.append((False, error))
    return outcomes


class _Queue:
    """One event loop's waiting pieces and batches in flight."""

    def __init__(self, loop: asyncio.AbstractEventLoop, width: int, limit: int) -> None:
        self.loop, self.width, self.limit = loop, width, limit
        self.waiting: list[_Piece] = []
        self.flying = 0  # batches in flight, and batches about to start
        self.tasks: set[asyncio.Task[None]] = set()

    def add(self, piece: _Piece, hop: Callable[[list[_Piece]], Awaitable[Outcomes]]) -> None:
        self.waiting.append(piece)
        if self.flying < self.width and len(self.waiting) == 1:
            self.flying += 1
            self.loop.call_soon(self.next, hop)  # what else arrives in this turn joins it

    def next(self, hop: Callable[[list[_Piece]], Awaitable[Outcomes]]) -> None:
        batch, self.waiting = self.waiting[: self.limit], self.waiting[self.limit :]
        if not batch:
            self.flying -= 1
            return
        if self.waiting and self.flying < self.width:
            self.flying += 1  # more than a batch waits and a lane is free: another batch
            self.loop.call_soon(self.next, hop)
        task = self.loop.create_task(self.commit(batch, hop))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def commit(
        self, batch: list[_Piece], hop: Callable[[list[_Piece]], Awaitable[Outcomes]]
    ) -> None:
        try:
            outcomes = await hop(batch)
        except BaseException as error:
            # The transaction itself failed (the connection, the commit): every piece hears it.
            for piece in batch:
                if not piece.future.done():
                    piece.future.set_exception(error)
            if not isinstance(error, Exception):
                raise
        else:
            for piece, (done, value) in zip(batch, outcomes, strict=True):
                if piece.future.done():
                    continue  # its caller was cancelled: the work stands, nobody waits for it
                if done:
                    piece.future.set_result(value)
                else:
                    piece.future.set_exception(value)
        finally:
            self.next(hop)


class GroupCommit:
    """Runs sync database work on the database thread, batched with work that arrives with it.

    Each event loop batches its own work (a server's loop, a worker's, a test's).
    """

    def __init__(self, limit: int = LIMIT, lanes: Lanes | None = None) -> None:
        self.limit = limit
        self.lanes = lanes
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def run[**P, R](self, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``function(*args, **kwargs)`` in the next batch; its result, or its error."""
        if under_sync_caller():
            # Its hop belongs on the sync caller's thread, in that caller's transaction.
            return await in_thread(function)(*args, **kwargs)
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            width = self.lanes.threads if self.lanes is not None else 1
            queue = self._queues[loop] = _Queue(loop, width, self.limit)
        future: asyncio.Future[R] = loop.create_future()
        call = partial(function, *args, **kwargs)
        queue.add(_Piece(call, contextvars.copy_context(), future), self._hop)
        return await future

    async def _hop(self, batch: list[_Piece]) -> Outcomes:
        if self.lanes is not None:
            return await self.lanes.run(_together, batch)
        return await in_thread(_together)(batch)
