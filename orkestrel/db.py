"""Database helpers every app shares: ids, owners, batching and the database thread.

The apps sit above this module; it knows nothing of their models.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connections

__all__ = [
    "CHUNK",
    "Lanes",
    "ascending",
    "chunked",
    "in_thread",
    "on_lane",
    "owner_pk",
    "parse_id",
    "shared_lanes",
    "under_sync_caller",
]

# Well under SQLite's oldest bound-parameter limit (999), so one IN list never overflows it.
CHUNK = 900
LANE_PREFIX = "orkestrel-lane"


def parse_id(value: object) -> uuid.UUID | None:
    """The UUID a store id names, or ``None`` unless it is a canonical UUID string.

    Canonical only (lowercase, hyphenated): the snapshot a store returns carries ``str(pk)``,
    which must equal the id it was asked for.
    """
    if not isinstance(value, str):
        return None
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return None
    return parsed if str(parsed) == value else None


def owner_pk(owner: AbstractBaseUser | int | None) -> int | None:
    """The primary key of a store's owner (a user or a user id), or ``None``."""
    if owner is None or isinstance(owner, int):
        return owner
    return owner.pk


def _on_database_thread() -> bool:
    return threading.current_thread() in getattr(SyncToAsync.single_thread_executor, "_threads", ())


def _tidy_connections() -> None:
    # Outside a request nothing recycles this thread's connection (``CONN_MAX_AGE``, a server
    # that dropped it): do what channels' ``database_sync_to_async`` does, but never inside an
    # open transaction (a sync caller's ``atomic`` block, or a test's) that closing would break.
    keep = _on_database_thread()
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            continue
        if keep and getattr(connection, "pool", None) is not None:
            # A pooled connection goes back at the end of each use (Django allows no
            # ``CONN_MAX_AGE`` beside a pool); the database thread, which every run's hops
            # share, keeps its own instead of checking one out per hop. It is still closed
            # when unusable (the server dropped it, an error left it broken).
            connection.close_at = None
        connection.close_if_unusable_or_obsolete()


def under_sync_caller() -> bool:
    """Whether this coroutine runs under a sync caller's ``async_to_sync`` (a sync view, a
    test): then ``in_thread`` runs its hops on that caller's thread, in its transaction."""
    return getattr(AsyncToSync.executors, "current", None) is not None


def _tidied[**P, R](function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    _tidy_connections()
    try:
        return function(*args, **kwargs)
    finally:
        _tidy_connections()


class Lanes:
    """A few database threads of their own, beside the database thread, for independent work.

    PostgreSQL serves several connections at once, and each statement is a round trip that
    leaves the GIL free: work that does not depend on the database thread's (a burst of run
    starts) can run on several threads, each with its connection, instead of queueing on one.
    SQLite has one writer: its work stays on the database thread. A lane hands its pooled
    connection back after each hop (one checkout a hop), so no lane holds one while idle.
    """

    def __init__(self, threads: int) -> None:
        # Threads, not batches: a transaction shared by starts that arrive together (a group
        # commit) made each wait for the whole batch to commit, and started runs later on
        # SQLite and PostgreSQL alike (bench/README.md, "Run starts in a burst").
        self.threads = threads
        self._executor: ThreadPoolExecutor | None = None

    async def run[**P, R](self, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``function`` on one of the lanes, in the caller's context."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix=LANE_PREFIX)
        work: Callable[[], R] = partial(_tidied, function, *args, **kwargs)
        call = partial(contextvars.copy_context().run, work)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def close(self) -> None:
        """Wait for the work in flight and end the threads; a later ``run`` starts new ones."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


@cache
def shared_lanes() -> Lanes | None:
    """The process's lanes (``DATABASE_LANES`` threads), or ``None`` where there is one (SQLite:
    its work stays on the database thread)."""
    threads: int = settings.DATABASE_LANES
    return Lanes(threads) if threads > 1 else None


async def on_lane[**P, R](function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``function`` on one of the process's lanes (PostgreSQL), else on the database thread;
    under a sync caller on that caller's thread (its transaction), as ``in_thread`` does."""
    lanes = shared_lanes()
    if lanes is None or under_sync_caller():
        return await in_thread(function)(*args, **kwargs)
    return await lanes.run(function, *args, **kwargs)


def in_thread[**P, R](function: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``function`` as a coroutine run on the process's database thread.

    That is ``sync_to_async(thread_sensitive=True)``'s one shared thread from async code (a
    consumer, a run, an async view): Django gives each ASGI request a thread of its own, and a
    request's hops racing the runs' hops on another thread would contend for SQLite's write
    lock (an in-memory test database refuses at once). Called under a sync view's
    ``async_to_sync``, asgiref sends the hop back to that view's own thread instead: the API's
    run routes run their views on this thread for that reason (``agents.api.dispatch``).
    Stale or expired connections are closed before and after the call, as channels does.
    """

    threaded = sync_to_async(partial(_tidied, function), thread_sensitive=True)

    async def shared(*args: P.args, **kwargs: P.kwargs) -> R:
        # ``None`` is what asgiref reads as "no request context": its shared thread.
        token = SyncToAsync.thread_sensitive_context.set(None)  # type: ignore[arg-type]
        try:
            return await threaded(*args, **kwargs)
        finally:
            SyncToAsync.thread_sensitive_context.reset(token)

    return shared


def chunked[T](items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def ascending(positions: Sequence[int | None]) -> bool:
    """Whether stored ``positions`` (``None``: a new row) ascend, with the new rows last.

    Then a save keeps every stored position and numbers new rows after the highest one.
    """
    last = -1
    appending = False
    for position in positions:
        if position is None:
            appending = True
        elif appending or position <= last:
            return False
        else:
            last = position
    return True
