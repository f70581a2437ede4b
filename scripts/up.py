"""`make up`: the multi-process setup on one machine, two Daphne web processes and two Celery
workers on PostgreSQL and Redis, their output in one stream, each line prefixed with its name.

It prepares the database once (creates it when missing, migrates, bootstraps), then starts the
processes, each in a process group of its own. Ctrl-C, ``SIGTERM`` or the death of any one of
them stops them all: ``SIGTERM`` to every group, a grace period, then ``SIGKILL`` to what is
left (a second Ctrl-C skips the grace). A process that died makes it exit 1, naming it.

Stdlib only, run with the project's Python (``.venv/bin/python scripts/up.py``): the processes
it starts are the virtualenv's Daphne (``python -m orkestrel.server``, as ``make run`` starts
it) and ``celery``, beside that Python.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import IO

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# As ``make run`` (the Makefile's WEBSOCKET_LIMITS): websocket messages and frames to 32 MiB.
WEBSOCKET_LIMITS = (
    "--websocket-max-message-size",
    "33554432",
    "--websocket-max-frame-size",
    "33554432",
)
# What each process reads, when the environment does not say: the local services that .ci/run
# points the suite at (the broker on another Redis database than the channel layer).
DEFAULTS = {
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/orkestrel",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
    # The setup this command shows: chat and API runs on the workers, the web processes only
    # holding sockets and streams (``web`` runs them in the web processes again).
    "ORKESTREL_RUNS_ON": "workers",
}
POSTGRES = ("postgres", "postgresql", "pgsql")
# The services' default ports, by URL scheme: what to check before anything starts.
PORTS = dict.fromkeys(POSTGRES, 5432) | {"redis": 6379, "rediss": 6379, "amqp": 5672}
# Run with the virtualenv's Python, which has psycopg (this script itself stays stdlib only).
ENSURE_DATABASE = """
import sys
import psycopg
from psycopg import sql
url, name = sys.argv[1:]
try:
    with psycopg.connect(url, dbname="postgres", autocommit=True, connect_timeout=5) as server:
        found = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not found:
            server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"created database {name!r}")
except psycopg.Error as error:
    sys.exit(f"cannot prepare database {name!r} on PostgreSQL: {error}".strip())
"""
SETUP = """
from django.core.management import call_command
call_command("migrate", interactive=False)
call_command("bootstrap")
"""


@dataclass(frozen=True)
class Exited:
    """A process ended (``code`` as ``Popen.returncode``: negative for a signal)."""

    name: str
    code: int


@dataclass(frozen=True)
class Signalled:
    """The launcher was asked to stop."""

    signum: int


type Event = Exited | Signalled


@dataclass(frozen=True)
class Command:
    """A process to start: its name (the prefix of its lines) and its argument vector."""

    name: str
    argv: tuple[str, ...]
    shown: str = ""  # what its start says it is, when not its arguments

    def __str__(self) -> str:
        return self.shown or " ".join(self.argv)


class Output:
    """One stream for every process: each line prefixed with its name, lines never mixed."""

    def __init__(self, names: Iterable[str], stream: IO[bytes]) -> None:
        self._width = max(len(name) for name in names)
        self._stream = stream
        self._lock = threading.Lock()

    def line(self, name: str, text: bytes) -> None:
        prefix = f"{name:<{self._width}} | ".encode()
        with self._lock:
            try:
                self._stream.write(prefix + text.rstrip(b"\r\n") + b"\n")
                self._stream.flush()
            except OSError:
                pass  # a closed terminal or pipe must not stop the stopping

    def say(self, text: str) -> None:
        self.line("up", text.encode())


class Child:
    """A running process in a group of its own, its output copied to ``output`` line by line;
    its end is put on ``events`` once its last lines are out."""

    def __init__(
        self, command: Command, env: dict[str, str], output: Output, events: SimpleQueue[Event]
    ) -> None:
        self.name = command.name
        self.process = subprocess.Popen(
            command.argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Its own group, so the terminal's Ctrl-C reaches the launcher alone: the launcher
            # decides the order and the grace, and can kill a process's children with it.
            start_new_session=True,
        )
        self._output = output
        self._events = events
        self._pump = threading.Thread(target=self._copy, name=f"{self.name}-out", daemon=True)
        self._pump.start()
        threading.Thread(target=self._wait, name=f"{self.name}-wait", daemon=True).start()
        output.say(f"{self.name} started (pid {self.process.pid}): {command}")

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the process's whole group (what is left of it)."""
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def _copy(self) -> None:
        assert self.process.stdout is not None
        for text in self.process.stdout:
            self._output.line(self.name, text)

    def _wait(self) -> None:
        code = self.process.wait()
        # A grandchild may hold the pipe open: its lines are not worth hiding the exit for.
        self._pump.join(timeout=1.0)
        self._events.put(Exited(self.name, code))


class Supervisor:
    """Starts processes, waits for a stop or a death, and stops them all."""

    def __init__(self, env: dict[str, str], output: Output, grace: float) -> None:
        self.env = env
        self.output = output
        self.grace = grace
        # SimpleQueue's put is safe in a signal handler, and its get is interrupted by one.
        self.events: SimpleQueue[Event] = SimpleQueue()
        self.children: list[Child] = []

    def listen(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda signum, _frame: self.events.put(Signalled(signum)))

    def start(self, command: Command) -> Child:
        child = Child(command, self.env, self.output, self.events)
        self.children.append(child)
        return child

    def step(self, command: Command) -> int | None:
        """Run one preparation to its end: ``None`` when it succeeded, else the exit code."""
        child = self.start(command)
        while True:
            event = self.events.get()
            if isinstance(event, Signalled):
                self.output.say(f"stopping ({_signame(event.signum)})")
                self.stop("as asked")
                return 0
            if event.name == child.name:
                self.children.remove(child)
                if event.code == 0:
                    return None
                self.output.say(f"{child.name} failed ({_describe(event.code)})")
                return 1

    def watch(self) -> int:
        """Wait until asked to stop (exit 0) or until a process ends (exit 1); stop them all."""
        event = self.events.get()
        if isinstance(event, Signalled):
            self.output.say(f"stopping ({_signame(event.signum)})")
            self.stop("as asked")
            return 0
        died = f"{event.name} exited ({_describe(event.code)})"
        self.output.say(f"{died}; stopping the others")
        self.stop(f"because {died}")
        return 1

    def stop(self, why: str) -> None:
        """``SIGTERM`` to every group; past the grace (or at a second stop signal) ``SIGKILL``."""
        for child in self.children:
            if child.running:
                child.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        why_kill = f"still running after {self.grace:g} s"
        while any(child.running for child in self.children):
            try:
                event = self.events.get(timeout=max(deadline - time.monotonic(), 0.0))
            except Empty:
                break
            if isinstance(event, Signalled):
                why_kill = f"{_signame(event.signum)} again"
                break
        late = [child.name for child in self.children if child.running]
        if late:
            self.output.say(f"killing {', '.join(late)} ({why_kill})")
        # Also the groups whose leader is gone: a process it started outlives it there.
        for child in self.children:
            child.signal(signal.SIGKILL)
        for child in self.children:
            child.process.wait()
        self.output.say(f"stopped, {why}")


def _describe(code: int) -> str:
    return f"killed by {_signame(-code)}" if code < 0 else f"exit code {code}"


def _signame(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def environment() -> dict[str, str]:
    """The processes' environment: this one, with the services' URLs as the settings would read
    them (the environment, else the checkout's ``.env``), else the local defaults."""
    env = dict(os.environ)
    dotenv = _dotenv(REPO / ".env")
    for name, default in DEFAULTS.items():
        env[name] = env.get(name) or dotenv.get(name) or default
    env["PYTHONUNBUFFERED"] = "1"  # lines as they come, not a pipe buffer at a time
    return env


def _dotenv(path: Path) -> dict[str, str]:
    """The ``NAME=value`` lines of a ``.env`` file (``export`` and quotes allowed)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        name, equals, value = line.strip().removeprefix("export ").partition("=")
        if equals and not name.startswith("#"):
            value = value.strip()
            if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            found[name.strip()] = value
    return found


def unreachable(env: dict[str, str]) -> str | None:
    """Say which service does not accept connections, before any process waits on it."""
    services = (
        ("DATABASE_URL", "PostgreSQL"),
        ("REDIS_URL", "Redis (the channel layer)"),
        ("CELERY_BROKER_URL", "the Celery broker"),
    )
    for variable, service in services:
        url = urllib.parse.urlsplit(env[variable])
        port = PORTS.get(url.scheme)
        if port is None or not url.hostname:
            continue  # SQLite, or a Unix socket: the processes will say
        address = (url.hostname, url.port or port)
        try:
            socket.create_connection(address, timeout=3).close()
        except OSError as error:
            return (
                f"{service} is not reachable at {address[0]}:{address[1]} ({variable}): "
                f"{error.strerror or error}. Start it, or set {variable} to one that runs."
            )
    return None


def preparations(env: dict[str, str]) -> list[Command]:
    """Create the PostgreSQL database when missing, then migrate and bootstrap it."""
    url = urllib.parse.urlsplit(env["DATABASE_URL"])
    steps = []
    if url.scheme in POSTGRES:
        name = urllib.parse.unquote(url.path.lstrip("/"))
        libpq = url._replace(scheme="postgresql").geturl()
        argv = (sys.executable, "-c", ENSURE_DATABASE, libpq, name)
        steps.append(Command("database", argv, f"create database {name!r} if missing"))
    # `make run`'s migrate and bootstrap, in one process: Django starts once, not twice.
    manage = (sys.executable, str(REPO / "manage.py"), "shell", "--no-imports", "-c", SETUP)
    steps.append(Command("setup", manage, "manage.py migrate --noinput && manage.py bootstrap"))
    return steps


def services(host: str, port: int, web: int, workers: int) -> list[Command]:
    """``web`` Daphne processes on consecutive ports from ``port``, and ``workers`` workers."""
    daphne = (
        str(BIN / "python"),
        "-m",
        "orkestrel.server",
        "-b",
        host,
        *WEBSOCKET_LIMITS,
    )
    commands = [
        Command(f"web-{n}", (*daphne, "-p", str(port + n - 1), "orkestrel.asgi:application"))
        for n in range(1, web + 1)
    ]
    # The pool (threads) and concurrency come from the settings; a node name of its own each.
    celery = (str(BIN / "celery"), "-A", "orkestrel", "worker", "--loglevel", "INFO")
    commands += [
        Command(
            f"worker-{n}",
            (*celery, "--hostname", f"worker-{n}@%h", "--without-gossip", "--without-mingle"),
        )
        for n in range(1, workers + 1)
    ]
    return commands


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Start Daphne web processes and Celery workers on PostgreSQL and Redis, "
        "their lines prefixed with their names; Ctrl-C stops them all."
    )
    parser.add_argument("--host", default="127.0.0.1", help="the web processes' address")
    parser.add_argument("--port", type=int, default=8000, help="web-1's port; web-2 the next")
    parser.add_argument("--web", type=int, default=2, help="Daphne processes (2)")
    parser.add_argument("--workers", type=int, default=2, help="Celery workers (2)")
    parser.add_argument(
        "--grace", type=float, default=10.0, help="seconds to stop before SIGKILL (10)"
    )
    options = parser.parse_args(argv)
    if options.web < 0 or options.workers < 0 or options.web + options.workers == 0:
        parser.error("start at least one process (--web and --workers count them)")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    env = environment()
    problem = unreachable(env)
    if problem:
        print(f"up: {problem}", file=sys.stderr)
        return 2
    steps = preparations(env)
    commands = services(options.host, options.port, options.web, options.workers)
    output = Output(["up", *(command.name for command in steps + commands)], sys.stdout.buffer)
    supervisor = Supervisor(env, output, options.grace)
    supervisor.listen()
    for step in steps:
        code = supervisor.step(step)
        if code is not None:
            return code
    for command in commands:
        supervisor.start(command)
    return supervisor.watch()


if __name__ == "__main__":
    sys.exit(main())
