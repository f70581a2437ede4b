"""A running job's progress: counted from its agent, stored on its row with the heartbeat, and
kept once it settled."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.jobs import JobRequest
from agents.jobs.records import beat
from agents.models import AgentJob, AgentProfile, ProviderEndpoint, Tool
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

LIST = {"operation": "list"}


@sync_to_async
def worker_profile(url: str, **endpoint_fields: Any) -> AgentProfile:
    """A profile with the workspace tool, on a model the stub server plays."""
    endpoint = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=url, **endpoint_fields
    )
    tool, _ = Tool.objects.get_or_create(name="workspace", defaults={"kind": Tool.Kind.BUILTIN})
    profile = AgentProfile.objects.create(slug="worker", name="worker", model=f"{endpoint.name}/m")
    profile.tools.add(tool)
    return profile


async def row_until(job_id: Any, condition: Callable[[AgentJob], bool]) -> AgentJob:
    """The job's row once ``condition`` holds for it (read as any other process reads it)."""
    async with asyncio.timeout(10):
        while True:
            row = await sync_to_async(AgentJob.objects.get)(pk=job_id)
            if condition(row):
                return row
            await asyncio.sleep(0.02)


async def test_a_running_jobs_progress_reaches_its_row_and_stays_once_it_settled(
    user, stub, services
):
    release = threading.Event()
    stub.enqueue(
        reply("openai", ["Looking "], calls=[("c1", "workspace", LIST)]),
        # The second answer streams, then its end waits for the test.
        reply("openai", ["Almost ", "there"], gate=release),
    )
    profile = await worker_profile(stub.url)
    service = services("process-a")
    request = JobRequest(profile=profile, messages=[{"role": "user", "content": "go"}])
    job = await service.enqueue(user_id=user.pk, request=request)
    running = {
        "turns": 2,
        "tools": 1,
        "last_tool": "workspace",
        "tokens": 15,
        "text": "Almost there",
    }
    seen = await row_until(job.pk, lambda row: row.progress == running)
    assert seen.status == "running"
    release.set()
    done = await service.wait(str(job.pk))
    assert done.status == "done" and done.result["content"] == "Almost there"
    # The last progress is kept, with the second request's usage.
    assert done.progress == {**running, "tokens": 30}


async def test_a_new_attempt_starts_its_progress_from_zero(user, stub, services):
    stub.enqueue(
        reply("openai", ["no "], calls=[("c1", "workspace", LIST)]),
        reply("openai", ["fails"], status=500),
        reply("openai", ["second try"]),
    )
    # The model server's failure reaches the job (its provider does not retry it).
    profile = await worker_profile(stub.url, max_retries=0)
    service = services("process-a")
    request = JobRequest(profile=profile, messages=[{"role": "user", "content": "go"}], retries=1)
    job = await service.enqueue(user_id=user.pk, request=request)
    done = await service.wait(str(job.pk))
    assert done.status == "done" and done.attempts == 2
    assert done.progress == {
        "turns": 1,
        "tools": 0,
        "last_tool": "",
        "tokens": 15,
        "text": "second try",
    }


def test_one_beat_stores_the_progress_of_the_jobs_that_moved_in_its_one_update(
    user, demo, services
):
    rows = [
        AgentJob.objects.create(
            user=user,
            profile=demo,
            job={"provider": demo.slug, "messages": [{"role": "user", "content": "hi"}]},
            status="running",
            owner="process-a",
            progress={"turns": 1},
        )
        for _ in range(3)
    ]
    moved, other, still = (str(row.pk) for row in rows)
    moved_to = {"turns": 2, "tools": 1, "last_tool": "x", "tokens": 9, "text": "é ok"}
    other_to = {"turns": 5, "tools": 0, "last_tool": "", "tokens": 0, "text": ""}
    with CaptureQueriesContext(connection) as queries:
        beat("process-a", [moved, other, still], {moved: moved_to, other: other_to})
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(writes) == 1
    stored = dict(AgentJob.objects.values_list("pk", "progress"))
    assert [stored[row.pk] for row in rows] == [moved_to, other_to, {"turns": 1}]
