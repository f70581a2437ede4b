"""The Celery side of chat and API runs (``ORKESTREL_RUNS_ON=workers``): the task that runs one
run a web process opened, and the sweep that continues the runs of lost workers.

A worker runs its runs on the one event loop it runs its agent jobs on (``orkestrel.celery``'s
``WorkerLoop``), through this module's part of it (``RunWorker``): a run manager of its own,
holding rows as ``worker:<owner>``, with the checkpoints, heartbeats, pacing and relay every
run has; its frames reach the web processes' sockets and streams through the channel layer,
as a run in another web process does. A run waits on its model server, not on the CPU: one
loop carries hundreds, and the pool's threads only block until theirs has settled, so its
message is acknowledged then (``acks_late``) and not before.

Recovery (``workers``): any sweep closes a lost worker's run as ``interrupted`` once its
heartbeat is stale (``ORKESTREL_JOB_STALE_SECONDS``, the workers' lease), keeping its partial
answer; this part's sweep then continues it as a new run, here.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from celery import Task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from orkestrel.celery import WorkerLoop, app, stop_worker_loop, worker_loop
from orkestrel.db import in_thread
from orkestrel.telemetry.propagation import message_carrier, within

from ..runtime.spec import load_session
from .active import ActiveRun
from .errors import StartFailed
from .fanout import spawn
from .handoff import Handoff
from .manager import RunManager
from .records import finish_run
from .timings import DEFAULT_TIMINGS
from .workers import (
    CONTINUED,
    RUN_CHAT,
    WORKER_HOLDER,
    Takeover,
    claim_run,
    closed_runs,
    takeovers,
)

__all__ = ["CONTINUED", "RunWorker", "run_chat", "run_worker"]

logger = logging.getLogger(__name__)

STALE_SECONDS = 10.0
# Frames of a worker's runs gather this long before they cross the layer (``RunTimings``), in
# one message per listening web process: ``bench/relay.py --runs-on workers`` measured (200
# runs x 50 deltas/s, 2 workers) added latency p50/p99 0.14/0.47 s at 100 ms, 0.9/1.3 s at
# 50 ms (a web process takes a layer message in several Redis round trips and falls behind).
RELAY_BATCH = 0.1


class RunWorker:
    """The runs' part of a worker loop: its run manager, and the takeover sweep."""

    def __init__(self, owner: str) -> None:
        # The workers' lease, as for agent jobs: a lost worker's run moves within seconds.
        stale = float(settings.ORKESTREL.get("JOB_STALE_SECONDS", STALE_SECONDS))
        timings = replace(
            DEFAULT_TIMINGS,
            stale=stale,
            sweep=stale / 2,
            checkpoint=min(DEFAULT_TIMINGS.checkpoint, stale / 4),
            relay_batch=RELAY_BATCH,
        )
        self.manager = RunManager(
            origin=f"{WORKER_HOLDER}{owner}", timings=timings, workers=False, share_all=True
        )
        self._sweeper: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, worker: WorkerLoop) -> RunWorker:
        """Made on the loop: the sweeps start at once (a worker started after another was
        lost continues its runs before any message reaches it)."""
        part = cls(worker.owner)
        part.manager.sweeper.ensure()
        part._sweeper = spawn(part._sweep())
        return part

    async def run_here(self, handoff: Handoff) -> str:
        """Claim the handed-over run and run it here until it settles; what happened.

        Idempotent by run: a message for a run a worker holds (``"held"``), or that has
        settled, does nothing; for one a sweep closed before a worker took it, the run is
        continued (``"continued"``) unless something followed it.
        """
        claim = await in_thread(claim_run)(handoff, self.manager.origin)
        if claim == "interrupted":
            found = await in_thread(takeovers)(run_id=handoff.run_id)
            active = await self.take_over(found[0]) if found else None
            if active is None:
                return claim
            await _settled(active)
            return "continued"
        if claim != "claimed":
            return claim
        try:
            loaded = await in_thread(load_session)(handoff.conversation_id, handoff.user_id)
        except Exception as error:
            logger.exception("run %s could not be loaded", handoff.run_id)
            await in_thread(finish_run)(handoff.run_id, "error", None, str(error)[:500])
            return "failed"
        try:
            active = await self.manager.adopt(handoff, loaded)
        except StartFailed:
            return "failed"
        await _settled(active)
        return "ran"

    async def take_over(self, takeover: Takeover) -> ActiveRun | None:
        """Continue an interrupted run as a new one here (``RunManager.continue_interrupted``);
        ``None`` if it could not start."""
        started = await self.manager.continue_interrupted(takeover)
        return started if isinstance(started, ActiveRun) else None

    async def _sweep(self) -> None:
        every = self.manager.timings.sweep
        while True:
            try:
                await self._drop_closed()
                # The sweep that closed a run continues it at once, naming the continuation in
                # the run's last frame; this pass picks up only runs left without one.
                left = await in_thread(takeovers)(grace=2 * every)
                for takeover in left:
                    await self.take_over(takeover)
            except Exception:  # noqa: BLE001 - the next pass tries again
                logger.warning("continuing lost workers' runs failed", exc_info=True)
            await asyncio.sleep(every)

    async def _drop_closed(self) -> None:
        """Stop at once, writing nothing more, the runs here that a sweep closed (this
        worker's beats came too late): another worker continues them."""
        going = {active.run_id: active for active in self.manager.running() if not active.settled}
        if not going:
            return
        for run_id in await in_thread(closed_runs)(list(going)):
            active = going[run_id]
            if active.settled or active.task is None:
                continue
            logger.warning("run %s was closed by a sweep: stopping it here", run_id)
            active.task.cancel()
            await asyncio.gather(active.task, return_exceptions=True)
            self.manager.release(active.conversation_id, active)

    async def stop(self) -> None:
        """Stop the sweep and the runs still going (their rows stay open: taken over)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        await self.manager.shutdown()


async def _settled(active: ActiveRun) -> None:
    if active.task is not None:
        await asyncio.gather(asyncio.shield(active.task), return_exceptions=True)


def run_worker(node: str) -> RunWorker:
    """This worker process's ``RunWorker`` (``node``: the worker's name)."""
    return worker_loop(node).part("runs", RunWorker.start)


@app.task(name=RUN_CHAT, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_chat(self: Task, data: dict[str, Any]) -> str:
    """Run the run a web process handed over (``Handoff.to_data``), unless it has settled or
    another worker holds it."""
    node = self.request.hostname or "celery"
    handoff = Handoff.from_data(data)
    carrier = message_carrier(self.request)
    verdict = worker_loop(node).call(within(carrier, run_worker(node).run_here(handoff)))
    logger.info("run %s: %s", handoff.run_id, verdict)
    return verdict


@worker_ready.connect
def _start_at_once(sender: Any = None, **_: Any) -> None:
    # Only where runs are on workers: elsewhere this worker's sweeps would run chats here.
    if settings.ORKESTREL.get("RUNS_ON") == "workers":
        run_worker(getattr(sender, "hostname", None) or "celery")


@worker_shutdown.connect
def _stop(**_: Any) -> None:
    stop_worker_loop()
