"""Chat runs on real Celery workers (``ORKESTREL_RUNS_ON=workers``): two Daphne processes hold
the sockets, worker processes run the answers.

As deployed: two ``daphne`` processes on one database (PostgreSQL's when ``DATABASE_URL`` names
it, else a SQLite file) and the Redis channel layer, ``celery -A orkestrel worker`` processes
started, killed with ``SIGKILL`` and stopped by the tests. The test process speaks websockets
to the servers and reads rows through ``manage.py shell``.

Needs ``CELERY_BROKER_URL`` (the broker) and ``REDIS_URL`` (the channel layer frames cross).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.processes import log_tail, stop_group

from .test_celery_workers import (
    BROKER,
    Stack,
    Worker,
    _bin,
    _database,
    _delete_queue,
    _free_port,
    until,
)

LAYER = os.environ.get("REDIS_URL", "")
pytestmark = pytest.mark.skipif(
    not (BROKER and LAYER),
    reason="set CELERY_BROKER_URL and REDIS_URL to run chats on Celery workers",
)

REPO = Path(__file__).resolve().parents[3]
WORD_SECONDS = 0.02
# The workers' lease: a killed worker's run is continued some STALE + STALE / 2 seconds later.
STALE = 3.0
START_TIMEOUT = 60.0
WAIT = 30.0  # any one frame, on a busy 2-core box
LONG = "word " * 200  # an answer of some five seconds

SETUP = """
import json
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.core.management import call_command
from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.services import create_conversation
call_command("migrate", verbosity=0, interactive=False)
ensure_demo_profile()
alice = get_user_model().objects.create_user(username="alice", password="alice-runs-5190")
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(alice.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = alice.get_session_auth_hash()
session.create()
print(json.dumps({
    "cookie": f"{settings.SESSION_COOKIE_NAME}={session.session_key}",
    "conversations": [str(create_conversation(user=alice, title=t).id) for t in ("a", "b")],
}))
"""
STORED = """
import json
from conversations.models import Message, Run
runs = Run.objects.filter(conversation_id={conversation!r}).order_by("id")
print(json.dumps({{
    "runs": [[run.id, run.status, run.holder, run.content] for run in runs],
    "messages": [[m.role, m.content] for m in Message.objects.filter(
        conversation_id={conversation!r}).order_by("position")],
}}))
"""


@dataclass
class Chat:
    """The two web processes, the session cookie and the seeded conversations."""

    stack: Stack
    urls: tuple[str, str]
    cookie: str
    conversations: list[str]

    def stored(self, conversation: str) -> dict[str, Any]:
        return json.loads(self.stack.shell(STORED.format(conversation=conversation)))


def _daphne(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [_bin("daphne"), "-b", "127.0.0.1", "-p", str(port), "orkestrel.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if process.poll() is not None:
            pytest.fail(f"daphne exited with {process.returncode}:\n{log_tail(log)}")
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        until(healthy, f"daphne to answer /healthz:\n{log_tail(log)}", START_TIMEOUT)
    except BaseException:
        stop_group(process)
        raise
    return process, url


def workers_env(database: str, queue: str, **more: str) -> dict[str, str]:
    """The environment of the web processes and workers: runs on workers, on ``database``
    and a broker ``queue`` of the test's own; ``more`` sets more."""
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": database,
            "REDIS_URL": LAYER,
            "CELERY_BROKER_URL": BROKER,
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "ORKESTREL_RUNS_ON": "workers",
            "ORKESTREL_DEMO_WORD_DELAY": str(WORD_SECONDS),
            "ORKESTREL_JOB_STALE_SECONDS": str(STALE),
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "celery-runs-tests-only",
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "PYTHONUNBUFFERED": "1",
            **more,
        }
    )
    return env


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chat]:
    folder = tmp_path_factory.mktemp("runs")
    queue = f"orkestrel-runs-{uuid.uuid4().hex[:10]}"
    with _database(folder) as database:
        env = workers_env(database, queue)
        stack = Stack(env=env, folder=folder, queue=queue, url="", key="")
        made = json.loads(stack.shell(SETUP))
        servers: list[tuple[subprocess.Popen[bytes], str]] = []
        try:
            with ThreadPoolExecutor(3) as pool:
                starting = [pool.submit(_daphne, env, folder / f"web-{n}.log") for n in (1, 2)]
                # The first worker starts meanwhile (the tests share it until one kills it).
                worker = pool.submit(stack.worker, "w0")
                for future in starting:
                    if future.exception() is None:
                        servers.append(future.result())
                for future in (*starting, worker):
                    future.result()  # a process that did not start fails the module
            yield Chat(
                stack=stack,
                urls=(servers[0][1], servers[1][1]),
                cookie=made["cookie"],
                conversations=made["conversations"],
            )
        finally:
            stack.stop_workers()
            for process, _ in servers:
                stop_group(process)
            _delete_queue(queue)


def live_worker(chat: Chat) -> Worker:
    """The worker that is running (one at a time here), started if none is."""
    alive = [worker for worker in chat.stack.workers if worker.process.poll() is None]
    return alive[0] if alive else chat.stack.worker(f"w{len(chat.stack.workers)}")


async def open_socket(chat: Chat, server: int, conversation: str) -> ClientConnection:
    """A websocket to one of the web processes, signed in; its ``state`` frame read."""
    url = chat.urls[server]
    socket = await connect(
        url.replace("http://", "ws://") + f"/ws/conversations/{conversation}/",
        origin=url,
        additional_headers={"Cookie": chat.cookie},
        proxy=None,
        max_size=None,
        open_timeout=WAIT,
    )
    assert (await receive(socket))["type"] == "state"
    return socket


async def receive(socket: ClientConnection) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(socket.recv(), WAIT))


async def send(socket: ClientConnection, content: str, nonce: str) -> None:
    await socket.send(json.dumps({"type": "send", "content": content, "nonce": nonce}))


async def run_of(socket: ClientConnection, nonce: str) -> list[dict[str, Any]]:
    """The frames of the run this socket's ``send`` started, from ``started`` to its end."""
    while (frame := await receive(socket))["type"] != "started" or frame["nonce"] != nonce:
        pass
    return await rest_of(socket, [frame])


async def rest_of(socket: ClientConnection, frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``frames`` (a run's first ones) and the run's next ones, to its ``finish``/``error``."""
    run = frames[0]["run"]
    while frames[-1]["type"] not in ("finish", "error"):
        frame = await receive(socket)
        if frame.get("run") == run:
            frames.append(frame)
    return frames


def answer(frames: list[dict[str, Any]]) -> str:
    return "".join(frame["content"] for frame in frames if frame["type"] == "token")


async def test_a_run_sent_through_one_web_process_streams_to_the_other_while_a_worker_runs_it(
    chat: Chat,
) -> None:
    worker = await asyncio.to_thread(live_worker, chat)
    conversation = chat.conversations[0]
    here = await open_socket(chat, 0, conversation)
    there = await open_socket(chat, 1, conversation)
    try:
        await send(here, "hello workers", "first")
        sent, seen = await asyncio.gather(run_of(here, "first"), run_of(there, "first"))
        # One stream, numbered once, whichever web process a socket is on.
        assert seen == sent
        assert [frame["seq"] for frame in seen] == list(range(1, len(seen) + 1))
        assert seen[-1]["type"] == "finish"
        assert seen[-1]["result"]["content"].startswith("You said: hello workers")
        assert answer(seen) == seen[-1]["result"]["content"]

        # The stop button of a socket on the other web process reaches the worker.
        await send(there, LONG, "second")
        started = await run_of_start(there, "second")
        while (frame := await receive(there)).get("run") != started["run"] or (
            frame["type"] != "token"
        ):
            pass
        await there.send(json.dumps({"type": "abort"}))
        stopped = await rest_of(there, [started])
        assert stopped[-1]["type"] == "finish" and stopped[-1]["result"]["stop"] == "abort"
    finally:
        await here.close()
        await there.close()

    stored = chat.stored(conversation)
    assert [status for _, status, _, _ in stored["runs"]] == ["done", "partial"]
    assert all(holder.startswith(f"worker:{worker.name}@") for _, _, holder, _ in stored["runs"])
    users = [content for role, content in stored["messages"] if role == "user"]
    assert users == ["hello workers", LONG.strip()]


async def run_of_start(socket: ClientConnection, nonce: str) -> dict[str, Any]:
    while (frame := await receive(socket))["type"] != "started" or frame["nonce"] != nonce:
        pass
    return frame


async def test_a_worker_killed_mid_run_leaves_it_to_another_which_answers_on_with_nothing_repeated(
    chat: Chat,
) -> None:
    first = await asyncio.to_thread(live_worker, chat)
    conversation = chat.conversations[1]
    socket = await open_socket(chat, 1, conversation)
    sender = await open_socket(chat, 0, conversation)
    try:
        await send(sender, LONG, "long")
        started = await run_of_start(socket, "long")
        frames = [started]
        # A second's worth of words: the run has checkpointed its partial answer.
        while len(answer(frames)) < 250:
            frame = await receive(socket)
            if frame.get("run") == started["run"]:
                frames.append(frame)
        await asyncio.to_thread(first.kill)
        second = await asyncio.to_thread(live_worker, chat)
        # The lost run ends, naming its continuation: the next run, on the second worker.
        ended: dict[str, Any] | None = None
        continued: list[dict[str, Any]] = []
        while ended is None or not continued:
            frame = await receive(socket)
            if frame.get("run") == started["run"] and frame["type"] == "finish":
                ended = frame
            elif (continued and frame.get("run") == continued[0]["run"]) or (
                frame["type"] == "started" and frame["run"] != started["run"]
            ):
                continued.append(frame)  # the continuation's frames, from its ``started``
        following = continued[0]
        assert ended["result"]["stop"] == "interrupted"
        assert ended["continued_by"] == following["run"]
        assert following["message"] is None and following["nonce"] is None
        continued = await rest_of(socket, continued)
    finally:
        await socket.close()
        await sender.close()

    kept = next(f for f in continued if f["type"] == "committed")["messages"]
    notice = next(f for f in continued if f["type"] == "notice")
    assert notice["code"] == "run_continued"
    assert continued[-1]["type"] == "finish" and continued[-1]["result"]["stop"] == "done"
    full = continued[-1]["result"]["content"]
    assert full.startswith("You said: " + LONG.strip())

    stored = chat.stored(conversation)
    (_, lost, lost_holder, partial), (_, done, done_holder, _) = stored["runs"]
    assert (lost, done) == ("interrupted", "done")
    assert lost_holder.startswith(f"worker:{first.name}@")
    assert done_holder.startswith(f"worker:{second.name}@")
    # The user's message once; the lost attempt's partial answer once, kept as it was saved
    # (and shown to the sockets); then the whole answer.
    assert stored["messages"] == [
        ["user", LONG.strip()],
        ["assistant", partial],
        ["assistant", full],
    ]
    assert partial and full.startswith(partial) and answer(frames).startswith(partial)
    assert [(m["role"], m["content"]) for m in kept] == [("assistant", partial)]
