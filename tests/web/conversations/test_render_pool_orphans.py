"""The rendering process dies with its server, even when the server is killed outright."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# How long the rendering process may outlive a server killed with SIGKILL.
GRACE_SECONDS = 10.0

# A stand-in server: start the pool with one large batch, say so, then wait to be killed.
SERVER = """
import sys
from conversations import render_pool
render_pool.render_all(["*word* " * 400])
print("ready", flush=True)
sys.stdin.read()
"""

pytestmark = pytest.mark.skipif(
    not hasattr(os, "pidfd_open"), reason="waits on process exits with pidfd_open (Linux)"
)


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # ``pid (comm) state ppid ...``; comm may hold spaces and parentheses.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def _exits_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ends within ``seconds`` (it need not be our child)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([handle], [], [], seconds)
        return bool(readable)
    finally:
        os.close(handle)


def test_the_rendering_process_dies_when_its_server_is_killed():
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        children = _children(server.pid)
        assert children, "the pool started no process"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)

    survivors = [pid for pid in children if not _exits_within(pid, GRACE_SECONDS)]
    for pid in survivors:  # leave no orphan behind, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes {survivors} outlived their killed server"
