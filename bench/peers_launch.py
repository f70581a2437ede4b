"""The peers benchmark's processes: the fake upstream, orkestrel and LangGraph, each its own group.

Every process starts in a session of its own (``start_new_session``), so ``Process.stop``
ends its whole group, whatever it started; ``Process.cpu`` reads the CPU of its whole tree
from ``/proc`` (every thread, ended ones included, and reaped children). LangGraph lives in
a venv of its own (``langgraph_venv``), never in orkestrel's.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import relay
from openai_compat import PROFILE, SETUP

__all__ = [
    "LANGGRAPH_PACKAGES",
    "VENV",
    "Process",
    "langgraph_venv",
    "launch",
    "start_langgraph",
    "start_orkestrel",
    "start_upstream",
]

BENCH = Path(__file__).resolve().parent
VENV = Path("/tmp/langgraph-venv")
# What ``langgraph_venv`` installs into a venv without ``langgraph``: the versions measured.
LANGGRAPH_PACKAGES = (
    "langgraph-cli[inmem]==0.4.40",
    "langgraph-api==0.16.7",
    "langgraph-runtime-inmem==0.36.7",
    "langchain-openai==1.8.1",
)


@dataclass
class Process:
    """A process started in its own session: ``stop`` ends its whole group."""

    popen: subprocess.Popen[bytes]
    port: int
    log: Path

    def cpu(self) -> float:
        """CPU seconds of the process tree: every thread, ended threads and reaped children."""
        tick = os.sysconf("SC_CLK_TCK")
        parents: dict[int, int] = {}
        spent: dict[int, float] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue  # it just ended
            parents[int(entry.name)] = int(fields[1])
            spent[int(entry.name)] = sum(int(value) for value in fields[11:15]) / tick
        tree, total = [self.popen.pid], 0.0
        while tree:
            pid = tree.pop()
            total += spent.get(pid, 0.0)
            tree += [child for child, parent in parents.items() if parent == pid]
        return total

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # what the group leader left behind (a child that outlived it)
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launch(command: list[str], env: dict[str, str], cwd: Path, log: Path, probe: str) -> Process:
    """Start ``command`` (``{port}`` in it: a free port) and wait until ``probe`` answers 200."""
    port = relay.free_port()
    popen = subprocess.Popen(
        [part.replace("{port}", str(port)) for part in command],
        cwd=cwd,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped whole
    )
    process = Process(popen, port, log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            process.stop()  # what it started, if anything
            raise SystemExit(f"{command[0]} exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}{probe}", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.stop()
    raise SystemExit(f"{command[0]} did not answer {probe} within 90 s")


def langgraph_venv(venv: Path) -> Path:
    """The venv's ``langgraph``, the venv created and ``LANGGRAPH_PACKAGES`` installed first
    when it has none (never in orkestrel's own venv)."""
    command = venv / "bin" / "langgraph"
    if not command.exists():
        print(f"creating {venv} with LangGraph ({', '.join(LANGGRAPH_PACKAGES)})", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "pip"), "install", "-q", *LANGGRAPH_PACKAGES]
        subprocess.run(pip, check=True, timeout=900)
    return command


def start_upstream(workdir: Path) -> Process:
    """``bench/openai_upstream.py``, the fake model both servers stream from."""
    command = [sys.executable, str(BENCH / "openai_upstream.py"), "--port", "{port}"]
    return launch(command, dict(os.environ), BENCH, workdir / "upstream.log", "/v1/models")


def start_orkestrel(workdir: Path, upstream: str) -> tuple[Process, str]:
    """Daphne serving the app on a fresh SQLite file; the process and the API key."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
        "DATABASE_URL": f"sqlite:///{workdir}/peers.sqlite3",
        "REDIS_URL": "",
        "LOG_LEVEL": "WARNING",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "API_THROTTLE_RATE": "100000/min",
        "ORKESTREL_MAX_RUNS_PER_USER": "0",  # the one user runs every stream at once
        "BENCH_USER": f"peers-{secrets.token_hex(4)}",
        "BENCH_UPSTREAM": upstream,
        "BENCH_PROFILE": PROFILE,
    }
    relay.manage(env, "migrate", "--noinput")
    lines = relay.manage(env, "shell", "-c", SETUP).splitlines()
    key = next(line for line in lines if line.startswith("BENCHKEY "))[9:]
    command = [sys.executable, "-c", relay.LAUNCH, "-b", "127.0.0.1", "-p", "{port}", "-v", "0"]
    process = launch(
        [*command, "orkestrel.asgi:application"],
        env,
        relay.ROOT,
        workdir / "orkestrel.log",
        "/healthz",
    )
    return process, key


def start_langgraph(
    workdir: Path, upstream: str, command: Path, jobs: int, persist: bool
) -> Process:
    """``langgraph dev`` serving ``bench/peers_graph.py`` (a ``langgraph.json`` in ``workdir``);
    ``persist``: its default, its in-memory stores pickled to files every 10 s."""
    folder = workdir / "langgraph"
    folder.mkdir()
    graph = BENCH / "peers_graph.py"
    config = {
        "dependencies": ["."],
        "graphs": {"peers": f"{graph}:graph"},
        "disable_persistence": not persist,
    }
    (folder / "langgraph.json").write_text(json.dumps(config))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH", "LANGCHAIN"))},
        "BENCH_UPSTREAM": upstream,
        "LOG_LEVEL": "WARNING",  # as orkestrel's: no log line per run
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    dev = [str(command), "dev", "--no-browser", "--no-reload", "--port", "{port}"]
    return launch(
        [*dev, "--n-jobs-per-worker", str(jobs), "--config", str(folder / "langgraph.json")],
        env,
        folder,
        workdir / "langgraph.log",
        "/ok",
    )
