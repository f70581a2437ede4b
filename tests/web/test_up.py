"""`make up`'s launcher (``scripts/up.py``) for real: two Daphne processes and two Celery
workers on PostgreSQL and Redis, their lines prefixed, all stopped together.

The launcher runs as ``make up`` runs it, on a database of its own that it creates (dropped
afterwards) on ``DATABASE_URL``'s PostgreSQL server, with ``REDIS_URL`` as the channel layer
and ``CELERY_BROKER_URL`` as the broker (a queue of its own); without the three, the module is
skipped. The test reads only the launcher's output, HTTP and the process table.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import redis
from kombu import Connection

DATABASE = os.environ.get("DATABASE_URL", "")
REDIS = os.environ.get("REDIS_URL", "")
BROKER = os.environ.get("CELERY_BROKER_URL", "")
pytestmark = pytest.mark.skipif(
    not (DATABASE.startswith(("postgres://", "postgresql://")) and REDIS and BROKER),
    reason="set DATABASE_URL (PostgreSQL), REDIS_URL and CELERY_BROKER_URL to run make up",
)

REPO = Path(__file__).resolve().parents[2]
GRACE = 8.0
TIMEOUT = 60.0  # for four processes to start on a busy 2-core box
NAMES = {"up", "database", "setup", "web-1", "web-2", "worker-1", "worker-2"}
LINE = re.compile(r"^(?P<name>\S+) +\| (?P<text>.*)$")
STARTED = re.compile(r"^(?P<name>\S+) started \(pid (?P<pid>\d+)\)")


class Launcher:
    """``scripts/up.py`` running, and every line it printed so far."""

    def __init__(self, env: dict[str, str], *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "scripts" / "up.py"), *options],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._closed = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            with self._changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def said(self, name: str, text: str) -> str:
        """Wait for a line of ``name``'s containing ``text``."""

        def found() -> str | None:
            for line in self.lines:
                match = LINE.match(line)
                if match and match["name"] == name and text in match["text"]:
                    return line
            return None

        with self._changed:
            line = self._changed.wait_for(lambda: found() or self._closed, TIMEOUT)
        if not isinstance(line, str):
            tail = "\n".join(self.lines[-40:])
            pytest.fail(f"no {text!r} from {name} ({self.process.poll()=}):\n{tail}")
        return line

    def pids(self) -> dict[str, int]:
        """Each process the launcher started, by name, as its ``started`` lines say."""
        found = {}
        for line in list(self.lines):
            match = LINE.match(line)
            started = match and match["name"] == "up" and STARTED.match(match["text"])
            if started:
                found[started["name"]] = int(started["pid"])
        return found

    def kill(self) -> None:
        """Leave nothing behind, whatever the test did: the launcher and every group it made."""
        for pid in [self.process.pid, *self.pids().values()]:
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)
        self.process.wait(timeout=10)


def alive(group: int) -> bool:
    """Whether any process is left in the process group ``group``."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _free_ports() -> int:
    """A port whose next one is free too (web-1's and web-2's), below the ephemeral range.

    Daphne binds them only after the migrations, seconds later: a port the kernel hands out
    for ``bind(0)`` or an outgoing connection (other tests run alongside) could be taken by
    then, so the pair comes from below the range the kernel hands out.
    """
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = random.randrange(20000, max(low - 1, 30000))
        with socket.socket() as first, socket.socket() as second:
            try:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port


def _forget_queue(queue: str) -> None:
    """Delete the test's queue (and, on Redis, the bindings the workers declared)."""
    with Connection(BROKER) as connection:
        try:
            connection.default_channel.queue_delete(queue)
        except Exception:  # noqa: BLE001 - nothing to delete
            pass
    if BROKER.startswith(("redis://", "rediss://")):
        client = redis.Redis.from_url(BROKER)
        try:
            client.delete(f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        finally:
            client.close()


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    """The launcher's environment: a database that does not exist yet (the first test has the
    launcher create it; the second finds it migrated, sparing a second migration), a queue of
    its own."""
    name = f"orkestrel_up_{uuid.uuid4().hex[:10]}"
    queue = f"orkestrel-up-{uuid.uuid4().hex[:10]}"
    made = dict(os.environ)
    made.update(
        {
            "DATABASE_URL": urllib.parse.urlsplit(DATABASE)._replace(path=f"/{name}").geturl(),
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "DEBUG": "false",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "up-tests-only",
        }
    )
    try:
        yield made
    finally:
        with psycopg.connect(DATABASE, dbname="postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _forget_queue(queue)


@pytest.fixture
def launch(env: dict[str, str]) -> Iterator[Callable[..., Launcher]]:
    """``launch(*options)``: start the launcher; whatever is left of it is killed afterwards."""
    started: list[Launcher] = []

    def start(*options: str) -> Launcher:
        started.append(Launcher(env, *options))
        return started[-1]

    yield start
    for launcher in started:
        launcher.kill()


def test_make_up_serves_two_web_processes_and_two_workers_until_ctrl_c_stops_them_all(launch):
    port = _free_ports()
    up = launch("--port", str(port), "--grace", str(GRACE))
    # The database did not exist: the launcher made it, migrated it and bootstrapped it.
    up.said("database", "created database")
    up.said("setup", "Applying agents.0001_initial... OK")
    up.said("setup", "Created the offline demo profile")
    for n, web in enumerate(("web-1", "web-2")):
        up.said(web, f"Listening on TCP address 127.0.0.1:{port + n}")
        health = httpx.get(f"http://127.0.0.1:{port + n}/healthz", timeout=10)
        assert health.status_code == 200 and health.json()["database"] is True
    for worker in ("worker-1", "worker-2"):
        up.said(worker, f"{worker}@")
        up.said(worker, " ready.")
    children = up.pids()
    assert set(children) == NAMES - {"up"}

    # Every line is prefixed with its process's name, the bars in one column.
    lines = list(up.lines)
    assert all((match := LINE.match(line)) and match["name"] in NAMES for line in lines), lines
    assert {line.index(" | ") for line in lines} == {max(len(name) for name in NAMES)}

    stopping = time.monotonic()
    up.process.send_signal(signal.SIGINT)
    assert up.process.wait(timeout=GRACE + 5) == 0
    assert time.monotonic() - stopping < GRACE, "they did not stop within the grace"
    up.said("up", "stopped, as asked")
    assert not any("killing" in line for line in up.lines)
    # No process is left in any of the groups, the web servers' own children included.
    assert [name for name, pid in children.items() if alive(pid)] == []


def test_make_up_stops_everything_and_fails_naming_the_process_that_died(launch):
    port = _free_ports()
    up = launch("--port", str(port), "--grace", str(GRACE))
    # As soon as all four run (what they are doing then does not matter to the launcher).
    up.said("up", "worker-2 started")
    children = up.pids()
    assert {"web-1", "web-2", "worker-1", "worker-2"} <= set(children)
    os.kill(children["worker-1"], signal.SIGKILL)

    assert up.process.wait(timeout=GRACE + 5) == 1
    up.said("up", "worker-1 exited (killed by SIGKILL); stopping the others")
    up.said("up", "stopped, because worker-1 exited (killed by SIGKILL)")
    assert [name for name, pid in children.items() if alive(pid)] == []
