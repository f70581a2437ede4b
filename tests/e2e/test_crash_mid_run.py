"""A server process killed (``kill -9``) mid-answer, while another serves the same conversation
on a shared database and channel layer: the run ends for everyone on the survivor, and a
message sent in the window before the sweep is answered.

Needs a shared channel layer (``REDIS_URL``): without one no process follows another's run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.processes import stop_group

from .conftest import SETUP_CODE, _server_env, _shell, start_daphne
from .test_two_processes import (
    Pair,
    _drop_postgres,
    _postgres_database,
    in_own_loop,
    open_socket,
    receive,
    stored,
)

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="needs REDIS_URL: a channel layer both processes share"
)

SEED = """
import json
from django.contrib.auth import get_user_model
from conversations.services import create_conversation
alice = get_user_model().objects.get(username="alice")
print(json.dumps([str(create_conversation(user=alice, title="crash").id)]))
"""
# The survivor closes the dead run once its heartbeat is 10 s old, sweeping every 5 s.
SWEPT = 60.0


@dataclass(frozen=True)
class Servers:
    """Two servers on one database and channel layer, and their processes (to kill)."""

    pair: Pair
    processes: tuple[subprocess.Popen[bytes], ...]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    folder = tmp_path_factory.mktemp("crash")
    env = _server_env(folder / "crash.sqlite3")
    env["ORKESTREL_DEMO_WORD_DELAY"] = "0.02"
    env["REDIS_URL"] = os.environ["REDIS_URL"]
    postgres = _postgres_database()
    if postgres is not None:
        env["DATABASE_URL"] = postgres[0]
    processes: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        printed = _shell(env, SETUP_CODE + SEED).strip().splitlines()
        made, ids = json.loads(printed[-2]), json.loads(printed[-1])
        with ThreadPoolExecutor(2) as pool:
            starting = [pool.submit(start_daphne, env, folder / f"daphne-{n}.log") for n in "ab"]
            processes = [future.result() for future in starting]
        pair = Pair(
            urls=(processes[0][1], processes[1][1]),
            cookie=f"{made['cookie']}={made['sessions']['alice']}",
            conversations={"crash": ids[0]},
            env=env,
        )
        yield Servers(pair, tuple(process for process, _ in processes))
    finally:
        for process, _ in processes:
            stop_group(process)
        if postgres is not None:
            _drop_postgres(postgres[1])


async def sse(pair: Pair, server: int, run: int, after: int = 0) -> AsyncIterator[dict[str, Any]]:
    """A run's events from one server, as the API's SSE stream sends them."""
    async with (
        httpx.AsyncClient(base_url=pair.urls[server], timeout=SWEPT) as http,
        http.stream(
            "GET",
            f"/api/runs/{run}/events/",
            headers={"Cookie": pair.cookie, "Last-Event-ID": str(after)},
        ) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                yield json.loads(line[6:])


async def frames_until(socket: Any, found: Any) -> list[dict[str, Any]]:
    seen = []
    while True:
        frame = await asyncio.wait_for(receive(socket), SWEPT)
        seen.append(frame)
        if found(frame):
            return seen


def test_a_killed_servers_run_ends_for_every_follower_and_the_message_sent_meanwhile_is_answered(
    servers: Servers,
) -> None:
    in_own_loop(_crash(servers))


async def _crash(servers: Servers) -> None:
    pair = servers.pair
    conversation = pair.conversations["crash"]
    owner = await open_socket(pair, 0, conversation)
    follower = await open_socket(pair, 1, conversation)
    try:
        # A long answer on server 0; the socket on server 1 sees it stream.
        await owner.send(json.dumps({"type": "send", "content": "long" + " word" * 3000}))
        started = await frames_until(owner, lambda f: f["type"] == "started")
        run = started[-1]["run"]
        await frames_until(follower, lambda f: f.get("run") == run and f["type"] == "token")

        # An SSE follower on server 1, some frames in.
        stream = sse(pair, 1, run)
        seen = [await anext(stream) for _ in range(3)]
        assert [f["seq"] for f in seen] == [1, 2, 3]

        os.killpg(servers.processes[0].pid, signal.SIGKILL)

        # In the window before the sweep: the slot is held by the dead run, so it waits.
        nonce = uuid.uuid4().hex
        await follower.send(json.dumps({"type": "send", "content": "still there?", "nonce": nonce}))
        await frames_until(
            follower,
            lambda f: f["type"] == "pending" and any(m["nonce"] == nonce for m in f["messages"]),
        )

        # The SSE stream ends on the run's finish, numbered right after what it saw.
        rest = [frame async for frame in stream]
        last = rest[-1]
        assert last["type"] == "finish" and last["result"]["stop"] == "interrupted"
        assert [f["seq"] for f in seen + rest] == list(range(1, len(seen) + len(rest) + 1))
        assert last["result"]["partial"] is True

        # The websocket follower sees the run end, then the queued message answered.
        ended = await frames_until(
            follower, lambda f: f.get("run") == run and f["type"] == "finish"
        )
        assert ended[-1]["result"]["stop"] == "interrupted"
        nxt = await frames_until(follower, lambda f: f["type"] == "started" and f["run"] != run)
        answered = nxt[-1]["run"]
        finish = await frames_until(
            follower, lambda f: f.get("run") == answered and f["type"] == "finish"
        )
        assert "still there?" in finish[-1]["result"]["content"]

        # A late replay, from past anything stored, ends on the same finish.
        replay = [frame async for frame in sse(pair, 1, run, after=10_000)]
        assert [(f["type"], f["seq"], f["result"]["stop"]) for f in replay] == [
            ("finish", 10_001, "interrupted")
        ]
    finally:
        await owner.close()
        await follower.close()

    found = stored(pair, conversation)[conversation]
    assert found["runs"] == ["interrupted", "done"]
    assert found["users"][-1] == "still there?"
