"""The app on a fresh install, started as ``make run`` starts it: ``manage.py migrate``,
``manage.py bootstrap``, then ``python -m orkestrel.server`` on a free loopback port, with a
throwaway SQLite file (the embedded defaults: no Redis, jobs in the web process).

For tests that reach the app only as a client would (HTTP, ``manage.py`` commands), no ORM.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.migrated import copy_sqlite
from tests.processes import log_tail, stop_group

__all__ = ["LiveApp", "live_app"]

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT = 40.0
# The Makefile's WEBSOCKET_LIMITS.
WEBSOCKET_LIMITS = (
    "--websocket-max-message-size",
    "33554432",
    "--websocket-max-frame-size",
    "33554432",
)


@dataclass(frozen=True)
class LiveApp:
    """A running server: its base ``url``, the environment its commands need, its log."""

    url: str
    env: Mapping[str, str]
    log: Path

    def manage(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``python manage.py <args>`` against the server's database (checked)."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=dict(self.env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment(folder: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("REDIS_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)  # the embedded defaults: one process, jobs in it
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
    )
    env.setdefault("SECRET_KEY", "orkestrel-live-app-tests-only-" + "0" * 40)
    return env


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer from /healthz in {START_TIMEOUT}s:\n{log_tail(log)}")
        time.sleep(0.1)


@contextmanager
def live_app(folder: Path, **extra: str) -> Iterator[LiveApp]:
    """Migrate and bootstrap a fresh database in ``folder`` and serve it (``extra``: more
    environment variables); the server is stopped on exit."""
    env = _environment(folder, extra)
    # The migrations' own tests run them; here ``migrate`` finds a migrated copy (seconds less).
    copy_sqlite(folder / "db.sqlite3")
    log = folder / "server.log"
    app = LiveApp(url="", env=env, log=log)
    app.manage("migrate", "--noinput")
    app.manage("bootstrap")
    port = _free_port()
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orkestrel.server",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                *WEBSOCKET_LIMITS,
                "orkestrel.asgi:application",
            ],
            cwd=REPO,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping it stops it all
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(process, url, log)
        yield LiveApp(url=url, env=env, log=log)
    finally:
        stop_group(process)
