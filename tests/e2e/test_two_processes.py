"""Two real Daphne processes on one database: a conversation runs one answer at a time across
both, and a raw-websocket flood leaves a process answering everyone.

The database is a shared SQLite file, or a throwaway database on the PostgreSQL server that
``DATABASE_URL`` names when it names one; ``REDIS_URL``, when set, is the processes' shared
channel layer (as a deployment of several processes runs). Only HTTP and websockets reach the
servers; ``manage.py shell`` seeds and reads the database.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from conversations.pending import MAX_PENDING
from tests.migrated import create_database, drop_database
from tests.processes import stop_group

from .conftest import SETUP_CODE, _server_env, _shell, start_daphne

SEED = """
import json
from django.contrib.auth import get_user_model
from conversations.services import create_conversation
alice = get_user_model().objects.get(username="alice")
made = [str(create_conversation(user=alice, title=t).id) for t in ("race", "flood", "calm")]
print(json.dumps(made))
"""
RUNS = """
import json
from conversations.models import Message, Run
found = {}
for conversation in %r:
    found[conversation] = {
        "runs": list(Run.objects.filter(conversation_id=conversation).order_by("id")
                     .values_list("status", flat=True)),
        "users": list(Message.objects.filter(conversation_id=conversation, role="user")
                      .order_by("position").values_list("content", flat=True)),
    }
print(json.dumps(found))
"""
WORD_SECONDS = "0.02"  # the demo model's pace: a race's run lasts seconds, the rest is quick
WAIT = 20.0  # seconds any one frame may take on a busy 2-core box
RACES = 3
SENDS = 500
BAD_FRAMES = 2000
BAD = [
    ("not json", "invalid"),
    ('{"type": "dance"}', "unknown_type"),
    ('{"type": "send"}', "invalid"),
    ('{"type": "send", "content": "half \\ud83d"}', "invalid"),
]


@dataclass(frozen=True)
class Pair:
    """Two servers on one database, and what the seed made."""

    urls: tuple[str, str]
    cookie: str  # the session cookie's header value
    conversations: dict[str, str]  # title -> id
    env: dict[str, str]


def _postgres_database() -> tuple[str, str] | None:
    """A fresh database on ``DATABASE_URL``'s PostgreSQL server: its URL and name, or ``None``."""
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://", "pgsql://")):
        return None
    return create_database(base, "orkestrel_two_")


def _drop_postgres(name: str) -> None:
    drop_database(os.environ["DATABASE_URL"], name)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp("two")
    env = _server_env(folder / "two.sqlite3")
    env["ORKESTREL_DEMO_WORD_DELAY"] = WORD_SECONDS
    postgres = _postgres_database()
    if postgres is not None:
        env["DATABASE_URL"] = postgres[0]
    if os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = os.environ["REDIS_URL"]
    processes = []
    try:
        printed = _shell(env, SETUP_CODE + SEED).strip().splitlines()
        made, ids = json.loads(printed[-2]), json.loads(printed[-1])
        logs = [folder / "daphne-a.log", folder / "daphne-b.log"]
        with ThreadPoolExecutor(2) as pool:
            starting = [pool.submit(start_daphne, env, log) for log in logs]
            for future in starting:
                try:
                    processes.append(future.result())
                except BaseException:
                    for other in starting:
                        if other is not future and other.exception() is None:
                            stop_group(other.result()[0])
                    raise
        yield Pair(
            urls=(processes[0][1], processes[1][1]),
            cookie=f"{made['cookie']}={made['sessions']['alice']}",
            conversations=dict(zip(("race", "flood", "calm"), ids, strict=True)),
            env=env,
        )
    finally:
        for process, _ in processes:
            stop_group(process)
        if postgres is not None:
            _drop_postgres(postgres[1])


def stored(pair: Pair, *conversations: str) -> dict[str, Any]:
    return json.loads(_shell(pair.env, RUNS % (list(conversations),)).strip().splitlines()[-1])


async def open_socket(pair: Pair, server: int, conversation: str) -> ClientConnection:
    """A websocket to one of the servers, signed in as alice; its ``state`` frame read."""
    url = pair.urls[server]
    socket = await connect(
        url.replace("http://", "ws://") + f"/ws/conversations/{conversation}/",
        origin=url,
        additional_headers={"Cookie": pair.cookie},
        proxy=None,
        compression=None,
        max_size=None,
        open_timeout=WAIT,
    )
    assert (await receive(socket))["type"] == "state"
    return socket


async def receive(socket: ClientConnection) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(socket.recv(), WAIT))


async def outcome(socket: ClientConnection, nonce: str) -> dict[str, Any]:
    """This socket's answer to its ``send``: its own ``started``, the ``pending`` frame that
    queued it (a run was busy), or a refusal.

    With a shared channel layer the socket also sees the other process's run: skipped.
    """
    while True:
        frame = await receive(socket)
        if frame["type"] == "started" and frame["nonce"] == nonce:
            return frame
        if frame["type"] == "pending" and any(m["nonce"] == nonce for m in frame["messages"]):
            return frame
        if frame["type"] == "error" and frame.get("run") is None:
            return frame


async def taken_back(socket: ClientConnection) -> list[str]:
    """Take the queue back (``pending_pop``): the texts this socket got."""
    await socket.send(json.dumps({"type": "pending_pop"}))
    while True:
        frame = await receive(socket)
        if frame["type"] == "pending" and frame["taken"]:
            return frame["taken"]


def in_own_loop(coroutine: Any) -> None:
    """Run ``coroutine`` on a loop of its own: the browser tests' sync Playwright keeps one
    running on this thread for the whole package."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coroutine).result()


async def until_finish(socket: ClientConnection, run: int) -> dict[str, Any]:
    while True:
        frame = await receive(socket)
        if frame.get("run") == run and frame["type"] in ("finish", "error"):
            return frame


def test_two_processes_sent_the_same_conversation_at_once_run_one_answer_and_queue_the_other(
    pair: Pair,
) -> None:
    in_own_loop(_race(pair))


async def _race(pair: Pair) -> None:
    conversation = pair.conversations["race"]
    sockets = [await open_socket(pair, server, conversation) for server in (0, 1)]
    try:
        winners = []
        for race in range(RACES):
            nonces = [f"race{race}-a", f"race{race}-b"]
            frames = [
                json.dumps({"type": "send", "content": nonce + " word" * 300, "nonce": nonce})
                for nonce in nonces
            ]
            # Both at once, one to each process.
            await asyncio.gather(*(s.send(f) for s, f in zip(sockets, frames, strict=True)))
            got = await asyncio.gather(
                *(outcome(s, n) for s, n in zip(sockets, nonces, strict=True))
            )
            kinds = sorted(frame["type"] for frame in got)
            assert kinds == ["pending", "started"], got
            index = next(i for i, frame in enumerate(got) if frame["type"] == "started")
            winners.append(nonces[index])
            # The loser's message waits for the next run: take it back, so none starts.
            taken = await taken_back(sockets[1 - index])
            assert [text.split()[0] for text in taken] == [nonces[1 - index]]
            # Stopped at once: the next race starts from a free slot.
            await sockets[index].send(json.dumps({"type": "abort"}))
            finish = await until_finish(sockets[index], got[index]["run"])
            assert finish["type"] == "finish" and finish["result"]["stop"] == "abort"

        # The slot is free again whichever process ran the last answer: the other one answers.
        other = 1 - index
        await sockets[other].send(json.dumps({"type": "send", "content": "hi", "nonce": "after"}))
        started = await outcome(sockets[other], "after")
        assert started["type"] == "started"
        finish = await until_finish(sockets[other], started["run"])
        assert finish["type"] == "finish" and finish["result"]["content"]
    finally:
        for socket in sockets:
            await socket.close()

    found = stored(pair, conversation)[conversation]
    # Each race ran one answer (stopped: partial), then the follow-up a whole one.
    assert found["runs"] == ["partial"] * RACES + ["done"]
    assert [content.split()[0] for content in found["users"]] == [*winners, "hi"]


def test_a_raw_websocket_flood_is_answered_while_another_socket_chats(pair: Pair) -> None:
    in_own_loop(_flood(pair))


async def _flood(pair: Pair) -> None:
    flood, calm = pair.conversations["flood"], pair.conversations["calm"]
    flooder = await open_socket(pair, 0, flood)
    neighbour = await open_socket(pair, 0, calm)
    frames: list[dict[str, Any]] = []
    queued = bad = 0
    done = asyncio.Event()

    async def read() -> None:
        nonlocal queued, bad
        while not done.is_set():
            frame = await receive(flooder)
            frames.append(frame)
            if frame["type"] == "pending" and frame["messages"]:
                queued += 1  # the send was queued for the next run
            elif frame["type"] == "error" and frame.get("run") is None:
                if frame["code"] == "too_many_pending":
                    queued += 1  # refused: the queue is full
                else:
                    bad += 1
            if queued == SENDS - 1 and bad == BAD_FRAMES:
                done.set()

    reader = asyncio.create_task(read())
    try:
        for n in range(SENDS):  # without waiting for any answer
            # The run the first send starts must outlast the flood, however slow the machine:
            # its echo takes a minute (the abort below ends it).
            words = 3_000 if n == 0 else 800
            text = json.dumps({"type": "send", "content": f"flood {n}" + " word" * words})
            await flooder.send(text)
        for n in range(BAD_FRAMES):
            await flooder.send(BAD[n % len(BAD)][0])

        # Meanwhile a socket on the same process holds a whole exchange.
        await neighbour.send(json.dumps({"type": "send", "content": "calm", "nonce": "calm"}))
        started = await outcome(neighbour, "calm")
        assert started["type"] == "started"
        finish = await until_finish(neighbour, started["run"])
        assert finish["type"] == "finish" and finish["result"]["content"]

        await asyncio.wait_for(reader, WAIT * 3)
        runs = [f for f in frames if f["type"] == "started"]
        assert len(runs) == 1
        codes = [f["code"] for f in frames if f["type"] == "error" and f.get("run") is None]
        expected = [BAD[n % len(BAD)][1] for n in range(BAD_FRAMES)]
        assert [c for c in codes if c != "too_many_pending"] == expected
        # The flooding socket still works: take its queue back, stop its run, see both land.
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        assert len(await taken_back(flooder)) == MAX_PENDING
        await flooder.send(json.dumps({"type": "abort"}))
        end = await until_finish(flooder, runs[0]["run"])
        assert end["type"] == "finish" and end["result"]["stop"] == "abort"
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await flooder.close()
        await neighbour.close()

    found = stored(pair, flood, calm)
    assert found[flood]["runs"] == ["partial"] and found[flood]["users"][0].startswith("flood 0 ")
    assert found[calm] == {"runs": ["done"], "users": ["calm"]}
