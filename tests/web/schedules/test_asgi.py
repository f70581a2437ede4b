"""``RunScheduler``: the server process ticks when jobs run there, and not when workers do."""

from __future__ import annotations

import pytest

from agents.schedules.asgi import RunScheduler
from agents.schedules.ticker import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)


async def app(scope, receive, send) -> None:
    return None


async def nothing():
    return {}


async def ignore(message) -> None:
    return None


async def test_the_first_event_starts_the_scheduler_once(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "JOBS_ON": "process"}
    scheduler = Scheduler(interval=3600)
    wrapped = RunScheduler(app, scheduler)
    try:
        await wrapped({"type": "http"}, nothing, ignore)
        first = scheduler._task
        await wrapped({"type": "http"}, nothing, ignore)
        assert first is not None and scheduler._task is first and not first.done()
    finally:
        await scheduler.stop()


async def test_with_jobs_on_workers_the_server_does_not_tick(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "JOBS_ON": "workers"}
    scheduler = Scheduler(interval=3600)
    await RunScheduler(app, scheduler)({"type": "http"}, nothing, ignore)
    assert scheduler._task is None
