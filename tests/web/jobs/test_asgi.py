"""``RestoreJobs``: a restarted server resumes the jobs a dead process left, at its startup."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from agents.jobs import job_service
from agents.jobs.asgi import RestoreJobs

pytestmark = pytest.mark.django_db(transaction=True)


async def inner(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def test_a_lifespan_startup_restores_the_jobs_before_it_completes(
    user, demo, left_by, services
):
    orphan = await sync_to_async(left_by)("dead-process", user, demo)
    inbox: asyncio.Queue = asyncio.Queue()
    sent: list[dict] = []

    async def send(message) -> None:
        sent.append(message)

    await inbox.put({"type": "lifespan.startup"})
    await inbox.put({"type": "lifespan.shutdown"})
    app = RestoreJobs(inner)
    # Shut down at once: the restored job is stopped and stays open for the next process.
    await app({"type": "lifespan"}, inbox.get, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    await sync_to_async(orphan.refresh_from_db)()
    assert orphan.owner == job_service.owner and not orphan.settled


async def test_without_lifespan_events_the_first_connection_restores(user, demo, left_by, services):
    orphan = await sync_to_async(left_by)("dead-process", user, demo)
    sent: list[dict] = []

    async def send(message) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    await RestoreJobs(inner)({"type": "http"}, receive, send)
    assert sent[0]["status"] == 204
    async with asyncio.timeout(10):
        while not await sync_to_async(
            lambda: job_service.owner == type(orphan).objects.get(pk=orphan.pk).owner
        )():
            await asyncio.sleep(0.01)
    done = await job_service.wait(str(orphan.pk))
    assert done.status == "done"
