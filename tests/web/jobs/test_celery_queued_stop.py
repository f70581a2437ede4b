"""A stop that comes before any Celery worker claimed the run (``ORKESTREL_RUNS_ON=workers``):
the run is settled at once, every follower in either web process sees it end as a stopped run,
and the worker that takes its message later runs nothing.

The processes are ``test_celery_runs``'s (two Daphne processes, workers started by the tests),
but no worker runs when a test sends: its message waits on the broker. The model is a
loopback server in this process, so a test sees whether anything asked it.

Needs ``CELERY_BROKER_URL`` (the broker) and ``REDIS_URL`` (the channel layer frames cross).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.processes import stop_group
from tests.providers.server import StubServer
from tests.providers.turns import reply

from .test_celery_runs import (
    LAYER,
    SETUP,
    WAIT,
    Chat,
    _daphne,
    open_socket,
    run_of,
    send,
    workers_env,
)
from .test_celery_workers import BROKER, Stack, _database, _delete_queue, until

pytestmark = pytest.mark.skipif(
    not (BROKER and LAYER),
    reason="set CELERY_BROKER_URL and REDIS_URL to run chats on Celery workers",
)

# The frames of a run stopped while it waited for a worker.
STOPPED = [("started", 1), ("abort", 2), ("finish", 3)]

# After ``SETUP`` (alice, her session): a profile on the loopback model, conversations on it,
# and an API key.
STUBBED = """
from agents.models import AgentProfile, ApiKey, ProviderEndpoint
ProviderEndpoint.objects.create(name="stub", kind="openai", base_url={url!r})
stubbed = AgentProfile.objects.create(slug="stubbed", name="stubbed", model="stub/m")
print(json.dumps({{
    "cookie": f"{{settings.SESSION_COOKIE_NAME}}={{session.session_key}}",
    "key": ApiKey.objects.issue(user=alice, name="queued stop")[1],
    "conversations": [
        str(create_conversation(user=alice, profile=stubbed, title=t).id) for t in ("ws", "api")
    ],
}}))
"""


@dataclass
class Stopping:
    """The processes, and the model server they ask."""

    chat: Chat
    stub: StubServer
    key: str

    def api(self, server: int) -> httpx.Client:
        """The REST API of one web process, as alice."""
        return httpx.Client(
            base_url=self.chat.urls[server],
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=WAIT,
        )


@pytest.fixture(scope="module")
def stopping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stopping]:
    folder = tmp_path_factory.mktemp("queued-stop")
    queue = f"orkestrel-stop-{uuid.uuid4().hex[:10]}"
    stub = StubServer().start()
    try:
        with _database(folder) as database:
            env = workers_env(database, queue, API_THROTTLE_RATE="100000/min")
            stack = Stack(env=env, folder=folder, queue=queue, url="", key="")
            made = json.loads(stack.shell(SETUP + STUBBED.format(url=f"{stub.url}/v1")))
            servers: list[tuple[subprocess.Popen[bytes], str]] = []
            try:
                with ThreadPoolExecutor(2) as pool:
                    starting = [pool.submit(_daphne, env, folder / f"web-{n}.log") for n in (1, 2)]
                    for future in starting:
                        if future.exception() is None:
                            servers.append(future.result())
                    for future in starting:
                        future.result()
                chat = Chat(
                    stack=stack,
                    urls=(servers[0][1], servers[1][1]),
                    cookie=made["cookie"],
                    conversations=made["conversations"],
                )
                yield Stopping(chat=chat, stub=stub, key=made["key"])
            finally:
                stack.stop_workers()
                for process, _ in servers:
                    stop_group(process)
                _delete_queue(queue)
    finally:
        stub.stop()


@pytest.fixture
def idle(stopping: Stopping) -> Iterator[Stopping]:
    """The processes with no worker running (the test starts one); stopped after the test."""
    assert not stopping.chat.stack.workers
    yield stopping
    stopping.chat.stack.stop_workers()


def events(api: httpx.Client, run_id: int, after: int = 0) -> list[dict[str, Any]]:
    """The run's frames over SSE (``GET /api/runs/{id}/events/``), to the stream's end."""
    frames: list[dict[str, Any]] = []
    with api.stream(
        "GET",
        f"/api/runs/{run_id}/events/",
        params={"after": after},
        headers={"Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line.removeprefix("data: ")))
    return frames


def ran_nothing(
    stopping: Stopping, run_id: int, content: str, conversation: str, asked: int
) -> None:
    """A worker took the stopped run's message and found it settled: the model was asked
    nothing more (``asked`` requests before), the conversation holds only the user's message."""
    worker = stopping.chat.stack.worker(f"late-{run_id}")
    until(lambda: worker.said(f"run {run_id}: settled"), f"the worker to find run {run_id} settled")
    assert len(stopping.stub.requests) == asked
    assert stopping.chat.stored(conversation) == {
        "runs": [[run_id, "partial", "", ""]],
        "messages": [["user", content]],
    }


async def test_a_stop_before_any_worker_claimed_the_run_ends_it_and_its_worker_later_runs_nothing(
    idle: Stopping,
) -> None:
    chat = idle.chat
    conversation = chat.conversations[0]
    asked = len(idle.stub.requests)
    here = await open_socket(chat, 0, conversation)
    there = await open_socket(chat, 1, conversation)
    try:
        await send(here, "never answered", "first")
        # No worker runs: the run waits on the broker, and the stop button stops it.
        await here.send(json.dumps({"type": "abort"}))
        sent, seen = await asyncio.gather(run_of(here, "first"), run_of(there, "first"))
        assert seen == sent
        assert [(f["type"], f["seq"]) for f in seen] == STOPPED
        assert seen[0]["message"]["content"] == "never answered"
        assert seen[1]["reason"] == "stopped by user"
        result = seen[2]["result"]
        assert (result["stop"], result["partial"], result["content"]) == ("abort", True, "")
        run_id = seen[0]["run"]
        # A follower that comes later replays the same frames, from either process.
        with idle.api(1) as api:
            assert await asyncio.to_thread(events, api, run_id) == seen

        await asyncio.to_thread(ran_nothing, idle, run_id, "never answered", conversation, asked)

        # The conversation's run slot is free: the next message starts a run a worker answers.
        idle.stub.enqueue(reply("openai", ["Answered ", "now"]))
        await send(here, "answer this", "second")
        answered = await run_of(there, "second")
    finally:
        await here.close()
        await there.close()
    assert answered[0]["run"] != run_id and answered[0]["seq"] == 1
    assert answered[-1]["type"] == "finish" and answered[-1]["result"]["stop"] == "done"
    assert answered[-1]["result"]["content"] == "Answered now"
    assert len(idle.stub.requests) == asked + 1
    runs = chat.stored(conversation)["runs"]
    assert [status for _, status, _, _ in runs] == ["partial", "done"]


def test_cancelling_a_queued_run_through_the_api_ends_it_for_an_sse_follower_in_the_other_process(
    idle: Stopping,
) -> None:
    conversation = idle.chat.conversations[1]
    asked = len(idle.stub.requests)
    with idle.api(0) as here, idle.api(1) as there:
        posted = here.post(f"/api/conversations/{conversation}/messages/", json={"content": "stop"})
        assert posted.status_code == 202, posted.text
        assert posted.json()["status"] == "queued"
        run_id = posted.json()["id"]
        with ThreadPoolExecutor(1) as pool:
            # Following from the other process as the stop comes: live, or (subscribed too
            # late for the live frames) from what the stop stored.
            following = pool.submit(events, there, run_id)
            cancelled = here.post(f"/api/runs/{run_id}/cancel/")
            followed = following.result(timeout=WAIT)
        assert cancelled.status_code == 202, cancelled.text
        body = cancelled.json()
        assert (body["status"], body["stop_reason"], body["content"]) == ("partial", "abort", "")
        assert [(f["type"], f["seq"]) for f in followed] == STOPPED
        assert followed[0]["message"]["content"] == "stop"
        assert followed[-1]["result"]["stop"] == "abort"
        # Replayed from the stored frames, from a sequence number.
        assert events(here, run_id, after=1) == followed[1:]
        again = here.post(f"/api/runs/{run_id}/cancel/")
        assert again.status_code == 409
    ran_nothing(idle, run_id, "stop", conversation, asked)
