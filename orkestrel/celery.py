"""The Celery app, by Celery's Django convention: configured from the ``CELERY_*`` settings.

Start a worker with ``celery -A orkestrel worker`` (Celery finds this module's ``app``). The
package's ``__init__`` does not import this module, as Celery's template has it: importing
``orkestrel.core`` (the kit) must not load Celery or Django. Nothing needs it to: the project's
tasks are declared on this app (not with ``shared_task``), and web processes send jobs and runs
by the tasks' names. Task modules are found in the installed apps, and in ``agents.jobs``,
``agents.runs`` and ``agents.schedules``, when the worker starts.

``WorkerLoop`` is what every task of a worker process shares: one asyncio event loop in a
thread of its own. Jobs and runs wait on model servers, not on the CPU, so one loop carries
many of them (one heartbeat each kind, the shared database thread, pooled HTTP clients); the
pool's threads (``CELERY_WORKER_POOL = "threads"``) each hand a message's work to that loop and
block until it has settled, so a message is acknowledged only then (``acks_late``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, cast

from celery import Celery

__all__ = ["WorkerLoop", "WorkerPart", "app", "stop_worker_loop", "worker_loop"]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")

app = Celery("orkestrel")
# Read lazily, at the app's first use: every ``CELERY_<NAME>`` Django setting is ``<name>``.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["agents.jobs", "agents.runs", "agents.schedules"])


class WorkerPart(Protocol):
    """One kind of work a worker loop carries (jobs, runs): stopped with the loop."""

    async def stop(self) -> None: ...


class WorkerLoop:
    """A worker process's event loop, running in a daemon thread, and the parts on it.

    ``owner`` names the worker on the rows it holds: its Celery node name, pid and a nonce
    (at most 53 characters).
    """

    def __init__(self, node: str) -> None:
        self.pid = os.getpid()
        self.owner = f"{node[:36]}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self.loop = asyncio.new_event_loop()
        self._parts: dict[str, WorkerPart] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="orkestrel-worker", daemon=True
        )
        self._thread.start()

    def call[T](self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop and wait for its result (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    def part[P: WorkerPart](
        self, name: str, start: Callable[[WorkerLoop], Coroutine[Any, Any, P]]
    ) -> P:
        """The part ``name`` of this loop, started on it (by ``start``) at the first call."""
        with self._lock:
            part = self._parts.get(name)
            if part is None:
                part = self._parts[name] = self.call(start(self))
        return cast(P, part)  # the part ``start`` made for this name

    def stop(self) -> None:
        """Stop every part (what they run stays open, for other workers), then the loop."""
        with self._lock:
            parts, self._parts = list(self._parts.values()), {}
        for part in reversed(parts):
            self.call(part.stop())
        self.call(self._cancel_the_rest())
        # What the loop's work left open in async generators (the model servers' HTTP
        # sessions among them) closes while the loop still runs.
        self.call(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    async def _cancel_the_rest(self) -> None:
        # The parts' chores (sweeps, heartbeats, relays): ended here, not destroyed pending.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)


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


def stop_worker_loop() -> None:
    """Stop this process's loop, if it has one (the worker shuts down)."""
    global _worker
    with _worker_lock:
        worker, _worker = _worker, None
    if worker is not None and worker.pid == os.getpid():
        worker.stop()
