"""A ``manage.py shell -c`` that stays up: one Django process runs many snippets.

Each snippet costs a fresh ``manage.py shell`` a Django start-up (seconds on a busy 2-core
machine); the browser tests run dozens against the same server's database. ``ShellHost``
starts this module once (``python -m tests.shell_host`` in the server's environment) and
sends it snippets: each runs in a namespace of its own with its printed output captured, and
the database connections are closed after it, as a process of its own would leave them.

The wire is one JSON line each way: the snippet's code in; ``{"ok", "out"}`` back (``out``
holds the traceback when ``ok`` is false).
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import django
from django.db import connections

__all__ = ["ShellError", "ShellHost"]

REPO = Path(__file__).resolve().parents[1]


class ShellError(RuntimeError):
    """A snippet raised: the message holds its output and traceback."""


class ShellHost:
    """The long-lived shell process for one environment (one database); thread-safe."""

    def __init__(self, env: Mapping[str, str], timeout: float = 120.0) -> None:
        self.env = dict(env)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def run(self, code: str) -> str:
        """Run ``code`` as ``manage.py shell -c`` would; what it printed."""
        with self._lock:
            process = self._started()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(code) + "\n")
            process.stdin.flush()
            line = _read_line(process.stdout, self.timeout)
            if not line:
                self.close()
                raise ShellError(f"the shell host exited ({process.poll()})")
            answer = json.loads(line)
        if not answer["ok"]:
            raise ShellError(answer["out"])
        return str(answer["out"])

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.shell_host"],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        return self._process


def _read_line(stream: IO[str], timeout: float) -> str:
    """A line from ``stream``, or ``TimeoutError`` (a snippet that hangs must fail the test)."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        raise TimeoutError(f"a shell snippet ran over {timeout} s")
    return box[0]


def _serve() -> None:
    django.setup()
    # The answers go to the real stdout; a snippet's prints go to its own buffer.
    answers = sys.stdout
    for line in sys.stdin:
        printed = io.StringIO()
        ok = True
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(json.loads(line), "<shell>", "exec"), {"__name__": "__main__"})
        except BaseException:  # noqa: BLE001 - told to the test, which fails with it
            ok = False
            printed.write(traceback.format_exc())
        finally:
            connections.close_all()
        answers.write(json.dumps({"ok": ok, "out": printed.getvalue()}) + "\n")
        answers.flush()


if __name__ == "__main__":
    _serve()
