"""A job on a real Celery worker writes its progress to its row as it runs, as a job in the
server does: the row is how any process (the parent's card, the job's page) sees it.

The processes are ``test_celery_workers``'s; the model is a loopback server in this process,
whose answer stalls until the test releases it.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tests.providers.turns import reply

from .test_celery_workers import BROKER, api, settled, stack, until  # noqa: F401

pytestmark = pytest.mark.skipif(
    not BROKER, reason="set CELERY_BROKER_URL (Redis or RabbitMQ) to run jobs on Celery workers"
)

PROFILE = """
from agents.models import AgentProfile, ProviderEndpoint, Tool
endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url={url!r})
profile = AgentProfile.objects.create(slug="stubbed", name="stubbed", model="stub/m")
profile.tools.add(Tool.objects.get_or_create(name="workspace", defaults={{"kind": "builtin"}})[0])
print("ok")
"""

PROGRESS = """
import json
from agents.models import AgentJob
print(json.dumps(AgentJob.objects.get(pk={job!r}).progress))
"""


class Release(threading.Event):
    """The model's answer stalls until the test sets this (longer than the stub's own bound:
    each look at the row is a ``manage.py shell``)."""

    def wait(self, timeout: float | None = None) -> bool:
        return super().wait(60.0)


def test_a_job_on_a_worker_stores_its_progress_while_it_runs_and_keeps_it(
    stack,  # noqa: F811
    api,  # noqa: F811
    stub,
):
    stack.shell(PROFILE.format(url=stub.url))
    release = Release()
    stub.enqueue(
        reply("openai", ["Looking "], calls=[("c1", "workspace", {"operation": "list"})]),
        reply("openai", ["Almost ", "there"], gate=release),
    )
    stack.worker("a")
    posted = api.post(
        "/api/jobs/", json={"profile": "stubbed", "messages": [{"role": "user", "content": "go"}]}
    )
    assert posted.status_code == 202, posted.text
    job = posted.json()["id"]

    def progress() -> dict[str, Any]:
        return json.loads(stack.shell(PROGRESS.format(job=job)))

    running = {"turns": 2, "tools": 1, "last_tool": "workspace", "tokens": 15}
    try:
        seen = until(
            lambda: (found := progress()) and found.get("text") == "Almost there" and found,
            "the worker's job to store its progress",
        )
    finally:
        release.set()
    assert {name: seen[name] for name in running} == running
    assert settled(api, job)["status"] == "done"
    assert progress() == {**running, "tokens": 30, "text": "Almost there"}
