"""Orkestrel against LangGraph Agent Server: one model, one run shape, REST + SSE, side by side.

One fake OpenAI-compatible upstream (``bench/openai_upstream.py``: deltas on an absolute
schedule, each stamped) serves both servers, each in its own process group:

- **orkestrel**: ``daphne orkestrel.asgi:application`` (``bench/relay.py``'s launcher) on a
  fresh SQLite file, set up as ``bench/openai_compat.py`` does (an ``openai`` endpoint at the
  upstream, a profile, a user, an API key). A run: ``POST /api/conversations/`` for the
  profile, then ``POST /api/conversations/{id}/messages/`` with ``Accept: text/event-stream``.
- **LangGraph**: ``langgraph dev --no-reload --n-jobs-per-worker 256`` (its in-memory server,
  ``langgraph-cli[inmem]``, from its own venv) serving ``bench/peers_graph.py``: one node,
  ``ChatOpenAI(streaming=True)`` at the upstream. A run: ``POST /threads``, then
  ``POST /threads/{id}/runs/stream`` with ``stream_mode`` ``messages-tuple``.

Per level of concurrency (``--levels``; a level's starts spread over ``--ramp``; at one, the
level is ``--single`` runs one at a time) both servers run, alternating which goes first.
Creating the conversations or threads comes before a pass and is not measured. Per server:
run start (send -> the server's first event), first token (send -> the first delta), added
per-token latency (arrival - the upstream's stamp), server CPU per run (the server's process
tree, every thread, ended ones included, over the pass) and runs lost (a delta missing,
repeated or out of order, no proper end). Exit status 1 unless orkestrel is ahead on every
figure at every level and nothing is lost. Every process started is killed at the end.

Run: ``.venv/bin/python bench/peers_server.py [--levels 1,50,200]`` (see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai_compat import PROFILE
from peers_clients import DIALECTS, Connection, Run
from peers_launch import (
    LANGGRAPH_PACKAGES,
    VENV,
    Process,
    langgraph_venv,
    start_langgraph,
    start_orkestrel,
    start_upstream,
)
from relay_clients import pct

CONNECTING = 20  # connections opened at once: a connect storm is not what is measured
PAUSE = 2.0  # seconds between passes: the last runs settle before the next pass starts
SETTLE = 0.5  # seconds a pass's CPU window stays open after its last run ended


# -- the passes -------------------------------------------------------------------------------


@dataclass
class Server:
    """One server under test: how a client opens a run and sends it."""

    name: str
    process: Process
    headers: dict[str, str]
    create: tuple[str, dict[str, Any]]  # the conversation's or thread's path and body
    run_path: Callable[[Any], str]  # from the created object, the path that streams a run
    run_body: Callable[[str], dict[str, Any]]  # from the user message


@dataclass
class Figures:
    """One server's figures at one level, over every pass."""

    starts: list[float] = field(default_factory=list)  # send -> the server's first event
    firsts: list[float] = field(default_factory=list)  # send -> the first delta
    latencies: list[float] = field(default_factory=list)  # arrival - the upstream's stamp
    cpu: list[float] = field(default_factory=list)  # server CPU seconds per run, each pass
    runs: int = 0
    lost: int = 0  # runs not complete
    errors: list[str] = field(default_factory=list)

    def add(self, run: Run, count: int) -> None:
        self.runs += 1
        self.starts += [run.first_event - run.sent] if not math.isnan(run.first_event) else []
        self.firsts += [run.first_token - run.sent] if not math.isnan(run.first_token) else []
        self.latencies += [at - stamp for at, _, stamp in run.tokens]
        if not run.complete(count):
            self.lost += 1
            self.errors.append(run.why())


async def opened(server: Server, gate: asyncio.Semaphore) -> tuple[Connection, str]:
    """A connection with its run's conversation or thread created on it."""
    async with gate:
        connection = Connection(server.process.port, server.headers)
        await connection.open()
        path, body = server.create
        status, created = await connection.call("POST", path, body)
        if status not in (200, 201):
            raise SystemExit(f"{server.name}: POST {path} answered {status}: {created}")
        return connection, server.run_path(created)


async def one_pass(
    server: Server, runs: int, count: int, interval: float, ramp: float, into: Figures
) -> None:
    """``runs`` runs at once, their starts spread over ``ramp``; the figures into ``into``."""
    gate = asyncio.Semaphore(CONNECTING)
    held = await asyncio.gather(*(opened(server, gate) for _ in range(runs)))
    replies = [Run() for _ in held]
    body = server.run_body(f"stream {count} {interval:g}")
    dialect = DIALECTS[server.name]
    gc.collect()
    cpu0 = server.process.cpu()
    start = time.monotonic()
    tasks = []
    for index, ((connection, path), run) in enumerate(zip(held, replies, strict=True)):
        delay = start + index * ramp / runs - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(connection.stream(path, body, run, dialect)))
    # Bounded: a run that never ends is reported as lost, not waited for forever.
    _, late = await asyncio.wait(tasks, timeout=ramp + count * interval + 120)
    for task in late:
        task.cancel()
    await asyncio.gather(*late, return_exceptions=True)
    await asyncio.sleep(SETTLE)  # what a server does after a run's last event is the run's too
    into.cpu.append((server.process.cpu() - cpu0) / runs)
    await asyncio.gather(*(connection.aclose() for connection, _ in held))
    for task, run in zip(tasks, replies, strict=True):
        run.error = run.error or ("unfinished" if task in late else "")
        into.add(run, count)


async def passes(
    args: argparse.Namespace, servers: dict[str, Server]
) -> dict[tuple[int, str], Figures]:
    """Every level, each server in turn, the order swapped from one pass to the next; under
    level 0, each server's CPU per run over all of them (work deferred past a pass, such as
    LangGraph's flush of its in-memory stores every 10 s, included)."""
    figures: dict[tuple[int, str], Figures] = {}
    # The clients keep every delta; the collector's full passes over that heap would stall
    # every client at once and show as the servers' latency.
    gc.disable()
    for name, server in servers.items():  # warm-up: imports, first queries, connection pools
        warm = Figures()
        await one_pass(server, 1, args.tokens, args.interval, 0.0, warm)
        if warm.lost:
            raise SystemExit(f"{name}: the warm-up run failed: {warm.errors[0]}")
    before = {name: server.process.cpu() for name, server in servers.items()}
    turn = 0
    for round_ in range(args.rounds):
        for level in args.levels:
            repeats = args.single if level == 1 else 1
            label = f"round {round_ + 1}, " if args.rounds > 1 else ""
            print(f"{label}{level} concurrent run(s) x {repeats} pass(es)", flush=True)
            for _ in range(repeats):
                order = list(servers) if turn % 2 == 0 else list(servers)[::-1]
                turn += 1
                for name in order:
                    await asyncio.sleep(PAUSE if level > 1 else 0.2)
                    into = figures.setdefault((level, name), Figures())
                    ramp = args.ramp if level > 1 else 0.0
                    await one_pass(servers[name], level, args.tokens, args.interval, ramp, into)
    await asyncio.sleep(PAUSE)
    for name, server in servers.items():
        runs = sum(found.runs for (_, of), found in figures.items() if of == name)
        figures[0, name] = Figures(cpu=[(server.process.cpu() - before[name]) / runs])
    gc.enable()
    return figures


# -- the report -------------------------------------------------------------------------------


def _cpu(found: Figures) -> float:
    return sum(found.cpu) / len(found.cpu) if found.cpu else math.nan


# (row, the figure from one server's Figures, whether it is a time or a count)
ROWS: tuple[tuple[str, Callable[[Figures], float], str], ...] = (
    ("run start p50", lambda f: pct(f.starts, 0.5), "ms"),
    ("run start p99", lambda f: pct(f.starts, 0.99), "ms"),
    ("first token p50", lambda f: pct(f.firsts, 0.5), "ms"),
    ("first token p99", lambda f: pct(f.firsts, 0.99), "ms"),
    ("added per token p50", lambda f: pct(f.latencies, 0.5), "ms"),
    ("added per token p99", lambda f: pct(f.latencies, 0.99), "ms"),
    ("server CPU per run", _cpu, "ms"),
    ("runs lost", lambda f: float(f.lost), "n"),
)


def _cell(value: float, unit: str) -> str:
    if math.isnan(value):
        return f"{'-':>12}"
    return f"{value * 1000:9,.1f} ms" if unit == "ms" else f"{value:12,.0f}"


def _ratio(ours: float, other: float) -> str:
    return f"{other / ours:10.1f}x" if ours > 0 and not math.isnan(other) else ""


def report(args: argparse.Namespace, figures: dict[tuple[int, str], Figures]) -> bool:
    """The side-by-side table with LangGraph / orkestrel; whether orkestrel is ahead on all."""
    print(f"\n{'':<26}{'orkestrel':>12}{'LangGraph':>12}   LangGraph / orkestrel")
    ahead, behind = True, []
    for level in args.levels:
        mine, theirs = figures[level, "orkestrel"], figures[level, "langgraph"]
        runs = f"{mine.runs} runs each" if level == 1 else f"{args.rounds} pass(es) each"
        print(f"{level} concurrent run(s) ({runs})")
        for name, value, unit in ROWS:
            ours, other = value(mine), value(theirs)
            ratio = _ratio(ours, other) if unit == "ms" else ""
            print(f"  {name:<24}{_cell(ours, unit)}{_cell(other, unit)}   {ratio}")
            if unit == "ms" and not ours < other:  # a NaN (nothing measured) is not ahead
                ahead = False
                behind.append(f"{name} at {level}")
        for server, found in (("orkestrel", mine), ("LangGraph", theirs)):
            for error in found.errors[:3]:
                print(f"  ! {server}: {error}")
    ours, other = _cpu(figures[0, "orkestrel"]), _cpu(figures[0, "langgraph"])
    print(f"all levels, every pass and what followed\n  {'server CPU per run':<24}", end="")
    print(f"{_cell(ours, 'ms')}{_cell(other, 'ms')}   {_ratio(ours, other)}")
    if not ours < other:
        ahead = False
        behind.append("server CPU per run, all levels")
    lost = sum(found.lost for found in figures.values())
    expected = {
        level: level * (args.single if level == 1 else 1) * args.rounds for level in args.levels
    }
    short = [key for key, found in figures.items() if key[0] and found.runs != expected[key[0]]]
    print()
    print(f"target: orkestrel ahead on every figure: {'met' if ahead else 'MISSED'}", end="")
    print(f" (behind or level: {', '.join(behind)})" if behind else "")
    print(f"target: nothing lost (both servers): {'met' if not lost and not short else 'MISSED'}")
    return ahead and not lost and not short


# -- the servers ------------------------------------------------------------------------------


def servers_of(
    args: argparse.Namespace, orkestrel: tuple[Process, str], langgraph: Process
) -> dict[str, Server]:
    process, key = orkestrel
    mode = args.langgraph_stream
    return {
        "orkestrel": Server(
            "orkestrel",
            process,
            {"Authorization": f"Bearer {key}"},
            ("/api/conversations/", {"profile": PROFILE}),
            lambda created: f"/api/conversations/{created['id']}/messages/",
            lambda text: {"content": text},
        ),
        "langgraph": Server(
            "langgraph",
            langgraph,
            {},
            ("/threads", {}),
            lambda created: f"/threads/{created['thread_id']}/runs/stream",
            lambda text: {
                "assistant_id": "peers",
                "input": {"messages": [{"role": "user", "content": text}]},
                "stream_mode": mode,
            },
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,50,200", help="concurrent runs, comma-separated")
    parser.add_argument("--single", type=int, default=10, help="level 1: runs one at a time")
    parser.add_argument("--tokens", type=int, default=100, help="deltas per run")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds a level's starts span")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every level")
    parser.add_argument(
        "--langgraph-venv",
        type=Path,
        default=VENV,
        help=f"LangGraph's own venv (default {VENV}); created, with "
        f"{' '.join(LANGGRAPH_PACKAGES)} installed, when it has no langgraph",
    )
    parser.add_argument(
        "--langgraph-jobs", type=int, default=256, help="langgraph dev --n-jobs-per-worker"
    )
    parser.add_argument(
        "--langgraph-stream",
        choices=("messages-tuple", "messages"),
        default="messages-tuple",
        help="LangGraph's stream_mode (messages: the whole message so far, every event)",
    )
    parser.add_argument(
        "--langgraph-persistence",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="LangGraph dev's default: its in-memory stores pickled to files every 10 s",
    )
    args = parser.parse_args()
    args.levels = [int(level) for level in args.levels.split(",")]
    if os.environ.get("CONN_MAX_AGE") == "0":
        raise SystemExit("CONN_MAX_AGE=0 is set (a connection per database hop): use a fresh shell")
    command = langgraph_venv(args.langgraph_venv)
    started: list[Process] = []
    with tempfile.TemporaryDirectory(prefix="peers-") as folder:
        workdir = Path(folder)
        try:
            upstream = start_upstream(workdir)
            started.append(upstream)
            url = f"http://127.0.0.1:{upstream.port}/v1"
            orkestrel = start_orkestrel(workdir, url)
            started.append(orkestrel[0])
            langgraph = start_langgraph(
                workdir, url, command, args.langgraph_jobs, args.langgraph_persistence
            )
            started.append(langgraph)
            print(
                f"orkestrel: daphne on :{orkestrel[0].port} (SQLite file); LangGraph: "
                f"langgraph dev on :{langgraph.port} ({args.langgraph_venv}, stream_mode "
                f"{args.langgraph_stream}, {args.langgraph_jobs} jobs, persistence "
                f"{'on' if args.langgraph_persistence else 'off'}); upstream on "
                f":{upstream.port}; each run {args.tokens} deltas {args.interval * 1000:g} ms "
                f"apart; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}\n",
                flush=True,
            )
            servers = servers_of(args, orkestrel, langgraph)
            client0 = time.process_time()
            figures = asyncio.run(passes(args, servers))
            print(f"(the clients used {time.process_time() - client0:.1f} s of CPU)")
            ok = report(args, figures)
        finally:
            for process in started:
                process.stop()
            for process in started[1:]:
                text = process.log.read_text(errors="replace")
                if "Traceback" in text:
                    kept = Path(tempfile.gettempdir()) / f"peers-{process.log.name}"
                    kept.write_text(text)
                    print(f"! {process.log.stem} logged a traceback: see {kept}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
