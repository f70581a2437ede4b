"""Helpers for tests that start real server and worker processes: stopping a process group,
and the end of its log for a failure message."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

__all__ = ["log_tail", "stop_group"]


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` of a process's log (``(no log)`` when it cannot be read)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_group(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Terminate a process's whole group (a warm shutdown), forcefully if it lingers past
    ``grace`` seconds."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
