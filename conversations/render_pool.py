"""Markdown rendering off the server's GIL: a one-process pool for everything but small texts.

markdown-it-py is pure Python (about 2 ms per KB of prose). Rendered in the server process,
a long answer holds the GIL that the event loop needs for every socket write, so one commit
stalls every live stream. A child process renders it on another core while the calling
(database) thread waits with the GIL released.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from .rendering import render_markdown

__all__ = ["INLINE_CHARS", "render_all", "shutdown"]

logger = logging.getLogger(__name__)

# Below this many characters in all, rendering inline is cheaper than the round trip.
INLINE_CHARS = 1024
# A child that takes longer than this (hung, or starved) is given up on: render inline.
WAIT_SECONDS = 10.0

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _start_child(server_pid: int) -> None:
    """The rendering process's initializer: ignore Ctrl-C, and die with the server."""
    # Ctrl-C reaches the whole process group; the child must outlive it until the server's
    # exit stops the pool (``concurrent.futures`` joins its workers at interpreter exit).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_exit_with, args=(server_pid,), name="render-pool-parent-watch", daemon=True
    ).start()


def _exit_with(server_pid: int) -> None:
    """Block until the server process ends, then end this one.

    A server killed outright (SIGKILL, the OOM killer) never stops the pool, and the child
    holds both ends of its own call queue, so it would wait for work forever. Not
    ``PR_SET_PDEATHSIG``: it fires when the *thread* that started the child exits, and the pool
    is started from whichever database thread first renders a large batch.
    """
    try:
        handle = os.pidfd_open(server_pid)
    except (AttributeError, OSError):  # not Linux, or no pidfd: watch the parent pid instead
        handle = None
    # Checked after opening: a dead server's pid could be reused, but our parent pid changes
    # the moment it dies, so a pidfd opened while it was still our parent is the server's.
    if os.getppid() != server_pid:
        os._exit(0)
    if handle is not None:
        select.select([handle], [], [])
    else:
        while os.getppid() == server_pid:
            time.sleep(1.0)
    os._exit(0)


def _render_batch(texts: list[str]) -> list[str]:
    return [render_markdown(text) for text in texts]


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # ``spawn``: forking a process that runs threads (the event loop's helpers,
            # database threads) can copy a held lock into the child.
            _pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_child,
                initargs=(os.getpid(),),
            )
        return _pool


def render_all(texts: Sequence[str]) -> list[str]:
    """Render each text with ``render_markdown``; large batches in the rendering process.

    Blocks the calling thread (never call it on the event loop); falls back to rendering
    inline when the pool is broken, so a crashed child costs speed, never output.
    """
    batch = list(texts)
    if sum(len(text) for text in batch) < INLINE_CHARS:
        return _render_batch(batch)
    pool = _executor()
    try:
        return pool.submit(_render_batch, batch).result(timeout=WAIT_SECONDS)
    except (BrokenProcessPool, CancelledError, FutureTimeout, RuntimeError) as error:
        # RuntimeError: another thread shut this pool down after it broke.
        logger.warning("markdown rendering process failed (%r); rendering inline", error)
        if isinstance(error, BrokenProcessPool | FutureTimeout):
            shutdown(pool)
        return _render_batch(batch)


def shutdown(pool: ProcessPoolExecutor | None = None) -> None:
    """Stop the rendering process (only if it is still ``pool``); a later call starts anew."""
    global _pool
    with _lock:
        if _pool is None or (pool is not None and _pool is not pool):
            return
        stopping, _pool = _pool, None
    stopping.shutdown(wait=False, cancel_futures=True)
