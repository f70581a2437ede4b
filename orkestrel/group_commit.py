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
from collections.abc import Callable
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


def _together(pieces: list[_Piece]) -> list[tuple[bool, Any]]:
    """Run ``pieces`` on this thread; each outcome is ``(True, result)`` or ``(False, error)``."""
    if len(pieces) == 1:
        # Alone: exactly the work as written, its own transactions and all.
        piece = pieces[0]
        try:
            return [(True, piece.context.run(piece.call))]
        except Exception as error:  # noqa: BLE001 - raised again in its caller's task
            return [(False, error)]
    outcomes: list[tuple[bool, Any]] = []
    with transaction.atomic():
        for piece in pieces:
            try:
                with transaction.atomic():
                    outcomes.append((True, piece.context.run(piece.call)))
            except Exception as error:  # noqa: BLE001 - raised again in its caller's task
                outcomes.append((False, error))
    return outcomes


class GroupCommit:
    """Runs sync database work on the database thread, batched with work that arrives with it."""

    def __init__(self, limit: int = LIMIT, lanes: Lanes | None = None) -> None:
        self.limit = limit
        self.lanes = lanes
        self._width = lanes.threads if lanes is not None else 1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[_Piece] = []
        self._flying = 0  # batches in flight, and batches about to start
        self._tasks: set[asyncio.Task[None]] = set()

    async def run[**P, R](self, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``function(*args, **kwargs)`` in the next batch; its result, or its error."""
        if under_sync_caller():
            # Its hop belongs on the sync caller's thread, in that caller's transaction.
            return await in_thread(function)(*args, **kwargs)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A new loop (a test's, a restarted server's): nothing of the old one carries over.
            self._loop, self._waiting, self._flying, self._tasks = loop, [], 0, set()
        future: asyncio.Future[R] = loop.create_future()
        call = partial(function, *args, **kwargs)
        self._waiting.append(_Piece(call, contextvars.copy_context(), future))
        if self._flying < self._width and len(self._waiting) == 1:
            self._flying += 1
            loop.call_soon(self._next)  # what else arrives in this turn joins the batch
        return await future

    def _next(self) -> None:
        batch, self._waiting = self._waiting[: self.limit], self._waiting[self.limit :]
        if not batch:
            self._flying -= 1
            return
        assert self._loop is not None
        if self._waiting and self._flying < self._width:
            self._flying += 1  # more than a batch waits and a lane is free: another batch
            self._loop.call_soon(self._next)
        task = self._loop.create_task(self._commit(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _commit(self, batch: list[_Piece]) -> None:
        try:
            if self.lanes is not None:
                outcomes = await self.lanes.run(_together, batch)
            else:
                outcomes = await in_thread(_together)(batch)
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
            self._next()
