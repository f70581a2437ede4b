"""Live-chat relay: a real Daphne server over loopback, real websocket clients.

The server is ``daphne bench.relay_app:application`` in a subprocess (the real app; the
``scripted`` model answers ``relay <count> <interval>`` with deltas stamped with the server's
``time.monotonic()``), on a fresh SQLite file set up with ``manage.py migrate`` and
``manage.py shell -c``. Clients are Autobahn's asyncio websocket client (installed with
Daphne), logged in through the login form. Both sides read the same system-wide monotonic
clock, so ``client receive time - delta stamp`` is the latency the relay adds.

1. Throughput: one connection, ``--deltas`` deltas with no delay.
2. Concurrency: ``--conversations`` sockets, each streaming ``--rate`` deltas/s for
   ``--seconds``: added latency (p50/p99), frames lost (``seq`` gaps), text lost.

Then the same again against the floor, ``daphne bench.relay_floor:application`` (a bare Channels
consumer: one SQL statement per message, the model's deltas straight to the socket), on a fresh
database of its own, and the app's figures beside the floor's with their ratios
(``--no-floor`` skips it). ``--durable`` adds the durable floor,
``daphne bench.relay_floor:durable_application``: the bare one plus a transaction at each run's
start (the user message and a ``Run`` row) and one at its end (the answer, the run settled).

``--telemetry`` measures the app twice, with traces (to a loopback OTLP collector,
``bench/otlp_sink.py``) and metrics both off, then both on, alternating over ``--rounds``, and
sets the server's CPU per run side by side (target: under 5 % more with both on).

``--runs-on workers`` measures instead the app twice through the Redis channel layer: with
runs in the web process, then with runs on ``--bench-workers`` Celery workers
(``celery -A bench.relay_worker worker``: the same stamping model, on the worker), the web
process only holding the sockets; then the two side by side.

Run: ``.venv/bin/python bench/relay.py [--conversations 200] [--redis] [--no-floor]``
(see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from otlp_sink import Sink, telemetry_env
from relay_clients import Client, Figures, close, connect, ms, pct, spread
from start_steps import summarise

ROOT = Path(__file__).resolve().parent.parent
TARGET_P99 = 0.050
APP = "bench.relay_app:application"
FLOOR = "bench.relay_floor:application"  # the bare consumer the app is measured against
# The least a durable run needs: a transaction at its start, one at its end (``--durable``).
DURABLE = "bench.relay_floor:durable_application"
DURABLE_TIMES = 2.0  # the app's run start and added p99 within this many times the durable's
WORKER = "bench.relay_worker"  # the Celery app of ``--runs-on workers``
FLOOR_ADDED = 1.5  # the app's added latency p99 within this many times the floor's
FLOOR_START = 2.0  # the app's run start p99 within this many times the floor's
TELEMETRY_CPU = 0.05  # ``--telemetry``: at most this much more server CPU per run, both on
# A database number the test suite does not use. ``socket_timeout`` works around redis-py 8's
# 5 s default, which equals channels_redis's 5 s BZPOPMIN and drops idle sockets (README).
REDIS_URL = "redis://127.0.0.1:6379/13?socket_timeout=30"
CONNECTING = 20  # handshakes in flight at once: a connect storm is not what is measured
# Run in ``manage.py shell -c``: the demo profile, one user, conversations via the service.
SETUP = """
import json, os
from django.contrib.auth import get_user_model
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.runs import BURST_FRAMES, GAP_SECONDS, TICK_SECONDS
from conversations.services import create_conversation
ensure_demo_profile()
user = get_user_model().objects.create_user(
    os.environ["RELAY_USER"], password=os.environ["RELAY_PASSWORD"]
)
ids = [str(create_conversation(user=user, title=f"relay {i}").id)
       for i in range(int(os.environ["RELAY_CONVERSATIONS"]))]
pacing = {"tick": TICK_SECONDS, "burst": BURST_FRAMES, "gap": GAP_SECONDS}
print("RELAY " + json.dumps({"ids": ids, "pacing": pacing}))
"""


# -- the server -------------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by the event-loop (main) thread and by all other threads."""
        main = other = 0.0
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except FileNotFoundError:  # a thread that just ended
                continue
            seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            if task.name == str(self.process.pid):
                main += seconds
            else:
                other += seconds
        return main, other

    def stop(self) -> None:
        if self.process.poll() is None:
            # SIGINT stops Twisted's reactor cleanly, so a sampled server writes its profile.
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"manage.py {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


# Daphne's own command line, with ``click`` hidden from Autobahn only (Celery, which the
# settings import, needs it): with click importable, Autobahn styles a debug line on every
# websocket send, about 7 % of the event loop under load, that production never pays.
LAUNCH = (
    "import sys; sys.modules['click'] = None; import autobahn.util; del sys.modules['click']; "
    "from daphne.cli import CommandLineInterface; CommandLineInterface.entrypoint()"
)


def start_server(env: dict[str, str], workdir: Path, index: int = 0, app: str = APP) -> Server:
    port = free_port()
    command = [sys.executable, "-c", LAUNCH, "-b", "127.0.0.1", "-p", str(port), "-v", "0"]
    log = workdir / f"server-{index}.log"
    process = subprocess.Popen(
        [*command, app],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    server = Server(process, port, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"daphne exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.stop()
    raise SystemExit("daphne did not answer /healthz within 30 s")


def start_workers(env: dict[str, str], workdir: Path, count: int, threads: int) -> list[Server]:
    """``count`` Celery workers running the benchmark's runs, once each says it is ready."""
    celery = Path(sys.executable).with_name("celery")
    workers = []
    for index in range(count):
        log = workdir / f"worker-{index}.log"
        command = [str(celery), "-A", WORKER, "worker", "--loglevel", "INFO", "-c", str(threads)]
        command += ["--hostname", f"relay{index}@%h", "--without-gossip", "--without-mingle"]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
        )
        workers.append(Server(process, 0, log))
    deadline = time.monotonic() + 60
    while not all(" ready." in w.log.read_text(errors="replace") for w in workers):
        if time.monotonic() > deadline or any(w.process.poll() is not None for w in workers):
            for worker in workers:
                worker.stop()
            tails = "\n".join(w.log.read_text(errors="replace")[-2000:] for w in workers)
            raise SystemExit(f"the workers did not start:\n{tails}")
        time.sleep(0.1)
    return workers


def delete_queue(broker: str, queue: str) -> None:
    """Delete the pass's queue (and on Redis the bindings kombu keeps beside it)."""
    import redis
    from kombu import Connection

    with Connection(broker) as connection:
        connection.default_channel.queue_delete(queue)
    if broker.startswith(("redis://", "rediss://")):
        client = redis.Redis.from_url(broker)
        client.delete(f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()


def forget_groups() -> None:
    """Empty the benchmark's Redis database: groups a failed ``group_discard`` left live a day."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match="asgi*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def login(port: int, username: str, password: str) -> str:
    """The session cookie of the benchmark user, through the real login form."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        page = http.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None, "no CSRF token on the login page"
        answer = http.post(
            "/accounts/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
        )
        assert answer.status_code == 302, f"login failed: {answer.status_code}"
        return f"sessionid={http.cookies['sessionid']}"


# -- the scenarios ----------------------------------------------------------------------------


async def stream(
    ports: int | list[int], cookie: str, ids: list[str], count: int, interval: float, ramp: float
) -> tuple[list[Client], float]:
    """Open one socket per conversation, start every run (spread over ``ramp``), drain them.

    With several server ports, conversation ``i`` is served by port ``i % len(ports)``.
    """
    gate = asyncio.Semaphore(CONNECTING)
    choices = ports if isinstance(ports, list) else [ports]

    async def opened(index: int, conversation_id: str) -> Client:
        async with gate:
            return await connect(choices[index % len(choices)], cookie, conversation_id)

    begun = time.monotonic()
    clients = await asyncio.gather(*(opened(i, cid) for i, cid in enumerate(ids)))
    start = time.monotonic()
    if len(clients) > 1:
        print(
            f"   sockets            {len(clients)} open, state received, in {start - begun:.1f} s"
        )
    for index, client in enumerate(clients):
        delay = start + index * ramp / len(clients) - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        client.send(f"relay {count} {interval}")
    # Bounded: a run that never finishes is reported as unfinished, not waited for forever.
    await asyncio.wait([c.done for c in clients], timeout=ramp + count * interval + 120)
    elapsed = time.monotonic() - start
    await close(clients)
    return clients, elapsed


@dataclass
class Summary:
    """What one server's pass measured: the figures set beside the other server's."""

    lost: int = 0
    delivered: float = math.nan  # scenario 1: deltas/s, first stamp -> last frame
    added: tuple[float, float] = (math.nan, math.nan)  # scenario 2: p50, p99 (seconds)
    start: tuple[float, float] = (math.nan, math.nan)  # scenario 2: p50, p99 (seconds)
    cpu: float = math.nan  # scenario 2: the servers' CPU seconds (every thread) per run


async def throughput(port: int, cookie: str, ids: list[str], deltas: int) -> tuple[int, float]:
    clients, _ = await stream(port, cookie, ids, deltas, 0, 0)
    one = Figures()
    one.add(clients[0], deltas)
    if not one.firsts:
        print(f"1. throughput: no token frame arrived ({clients[0].frames[-1:]})\n")
        return max(one.lost, 1), math.nan
    span = one.last_receive - one.firsts[0]
    produced = one.lasts[0] - one.firsts[0]
    print(f"1. throughput: one connection, {deltas:,} deltas, no delay")
    print(f"   delivered          {one.deltas / span:9,.0f} deltas/s  (first stamp -> last frame)")
    print(
        f"   frames             {one.frames / span:9,.0f} frames/s  ({one.frames:,} token frames)"
    )
    print(f"   provider           {deltas / produced:9,.0f} deltas/s  (first -> last stamp)")
    print(f"   added latency      {spread(one.latencies)}")
    print(
        f"   lost               {one.lost_frames} frames, {one.lost_deltas} deltas, "
        f"{one.unfinished} unfinished\n"
    )
    return one.lost, one.deltas / span


async def concurrency(
    args: argparse.Namespace, servers: list[Server], cookie: str, ids: list[str]
) -> tuple[Figures, float]:
    count = round(args.rate * args.seconds)
    print(
        f"2. concurrency: {len(ids)} conversations x {count} deltas at {args.rate:g}/s "
        f"(starts spread over {args.ramp:g} s)"
    )
    (loop0, rest0), cpu_client = cpu(servers), time.process_time()
    ports = [server.port for server in servers]
    clients, elapsed = await stream(ports, cookie, ids, count, 1 / args.rate, args.ramp)
    (loop1, rest1), cpu_client = cpu(servers), time.process_time() - cpu_client
    many = Figures()
    for client in clients:
        many.add(client, count)
    print(f"   run start          {spread(many.starts)}  (send -> started frame)")
    print(f"   added latency      {spread(many.latencies)}  (delta stamp -> client)")
    for name, window, latencies in many.phases():
        if window > 0:
            print(f"   {name:<18} {spread(latencies)}  (added, over {window:.1f} s)")
        else:
            print(f"   {name:<18} never (the last run began after the first ended)")
    print(f"   provider lag       {spread(many.lags)}  (loop lateness, not in the above)")
    if args.timeline:
        many.timeline(min(client.sent for client in clients))
    print(
        f"   frames             {many.frames:,} token frames, "
        f"{many.deltas / many.frames:.2f} deltas each"
    )
    print(
        f"   lost               {many.lost_frames} frames (seq gaps), {many.lost_deltas} deltas, "
        f"{many.broken} runs with wrong text, {many.unfinished} unfinished, "
        f"{many.dropped} sockets closed by the server"
    )
    print(
        f"   CPU                server loop threads {(loop1 - loop0) / elapsed:4.0%}, "
        f"other threads {(rest1 - rest0) / elapsed:4.0%}, "
        f"clients {cpu_client / elapsed:4.0%} of a core ({elapsed:.1f} s wall)"
    )
    return many, (loop1 - loop0 + rest1 - rest0) / max(1, len(clients))


def cpu(servers: list[Server]) -> tuple[float, float]:
    """CPU seconds of every server's event-loop threads and of their other threads."""
    pairs = [server.cpu() for server in servers]
    return sum(main for main, _ in pairs), sum(other for _, other in pairs)


async def scenarios(
    args: argparse.Namespace, servers: list[Server], cookie: str, setup: dict, floor: bool
) -> Summary:
    ids, pacing, port = setup["ids"], setup["pacing"], servers[0].port
    # The load generator keeps every frame it receives for the figures; its collector's full
    # passes over that growing heap stalled all 200 clients at once and showed as relay
    # latency. The instrument runs without one (the server keeps its own).
    gc.disable()
    await stream(port, cookie, ids[:1], 200, 0, 0)  # warm-up: imports, first queries
    if floor:
        print("pacing             none: one token frame per delta, sent as the model yields it\n")
    else:
        print(
            f"pacing             about one text frame per {pacing['tick'] * 1000:g} ms tick, "
            f"{pacing['burst']} in a row, {pacing['gap'] * 1000:g} ms apart "
            "(a delta waits only when its run is past that)\n"
        )
    summary = Summary()
    if args.deltas:
        summary.lost, summary.delivered = await throughput(port, cookie, ids[1:2], args.deltas)
    if args.conversations:
        many, summary.cpu = await concurrency(args, servers, cookie, ids[2:])
        summary.lost += many.lost
        summary.added = (pct(many.latencies, 0.5), pct(many.latencies, 0.99))
        summary.start = (pct(many.starts, 0.5), pct(many.starts, 0.99))
    return summary


def alone(app: Summary) -> bool:
    """The app's own target: nothing lost, added latency p99 under ``TARGET_P99``."""
    ok = app.lost == 0 and not app.added[1] >= TARGET_P99
    verdict = "met" if ok else "MISSED"
    print(f"\ntarget: nothing lost, p99 added latency < {ms(TARGET_P99).strip()}: {verdict}")
    return ok


def side_by_side(title: str, heads: tuple[str, str, str], mine: Summary, base: Summary) -> None:
    """Two summaries' figures in columns, with ``mine / base`` for each."""

    def row(name: str, value: float, against: float, unit: str) -> None:
        ratio = f"{value / against:8.2f}x" if against > 0 else f"{'-':>9}"
        if unit == "ms":
            print(f"   {name:<22} {ms(value)}   {ms(against)}   {ratio}")
        else:
            print(f"   {name:<22} {value:7,.0f} /s   {against:7,.0f} /s   {ratio}")

    print(f"\n{title}")
    print(f"   {'':<22} {heads[0]:>10}   {heads[1]:>10}   {heads[2]:>9}")
    row("added latency p50", mine.added[0], base.added[0], "ms")
    row("added latency p99", mine.added[1], base.added[1], "ms")
    row("run start p50", mine.start[0], base.start[0], "ms")
    row("run start p99", mine.start[1], base.start[1], "ms")
    row("throughput delivered", mine.delivered, base.delivered, "/s")
    print(f"   {'lost':<22} {mine.lost:10d}   {base.lost:10d}")


def median_of(summaries: list[Summary]) -> Summary:
    """Each figure's median over several passes of one server; ``lost`` is their sum."""

    def middle(values: list[float]) -> float:
        known = [value for value in values if not math.isnan(value)]
        return statistics.median(known) if known else math.nan

    return Summary(
        lost=sum(summary.lost for summary in summaries),
        delivered=middle([summary.delivered for summary in summaries]),
        added=(
            middle([summary.added[0] for summary in summaries]),
            middle([summary.added[1] for summary in summaries]),
        ),
        start=(
            middle([summary.start[0] for summary in summaries]),
            middle([summary.start[1] for summary in summaries]),
        ),
        cpu=middle([summary.cpu for summary in summaries]),
    )


def telemetry_cost(off: Summary, on: Summary, spans: int) -> bool:
    """The app with traces and metrics on beside it with both off: CPU per run, latency."""
    side_by_side(
        "telemetry on (traces to a loopback OTLP collector, metrics) against off",
        ("on", "off", "on/off"),
        on,
        off,
    )
    more = on.cpu / off.cpu - 1
    print(
        f"   {'server CPU per run':<22} {on.cpu * 1000:7.2f} ms   {off.cpu * 1000:7.2f} ms   "
        f"{on.cpu / off.cpu:8.3f}x"
    )
    print(f"   ({spans:,} spans reached the collector)")
    ok = more < TELEMETRY_CPU and on.lost == 0 and off.lost == 0
    verdict = "met" if ok else "MISSED"
    print(
        f"\ntarget: CPU per run with telemetry on < +{TELEMETRY_CPU:.0%} ({more:+.1%}): {verdict}"
    )
    return ok


def compare(app: Summary, floor: Summary, rounds: int = 1) -> bool:
    """The app beside the floor, with their ratios, and the targets relative to the floor."""
    side_by_side(
        "app against the floor (the same load on the same machine, one after the other)"
        if rounds == 1
        else f"app against the floor: the median of each figure over {rounds} alternating rounds",
        ("app", "floor", "app/floor"),
        app,
        floor,
    )
    print("   (throughput: scenario 1, higher is better; the floor sends a frame per delta)")
    added, start = app.added[1], app.start[1]
    checks = [
        (
            f"added latency p99 <= {FLOOR_ADDED:g}x the floor's",
            added <= FLOOR_ADDED * floor.added[1],
        ),
        (f"added latency p99 < {ms(TARGET_P99).strip()}", added < TARGET_P99),
        (f"run start p99 <= {FLOOR_START:g}x the floor's", start <= FLOOR_START * floor.start[1]),
        ("nothing lost (app and floor)", app.lost == 0 and floor.lost == 0),
    ]
    print()
    for name, met in checks:
        print(f"target: {name}: {'met' if met else 'MISSED'}")
    return all(met for _, met in checks)


def against_durable(app: Summary, apps: list[Summary], durables: list[Summary]) -> bool:
    """The app beside the durable floor (the medians, and each round's ratios)."""
    for round_, (app_pass, durable) in enumerate(zip(apps, durables, strict=True)):
        print(
            f"round {round_ + 1}: run start p99 {app_pass.start[1] / durable.start[1]:.2f}x, "
            f"added p99 {app_pass.added[1] / durable.added[1]:.2f}x the durable floor's"
        )
    floor = median_of(durables)
    side_by_side(
        "app against the durable floor (a transaction at each run's start and end)",
        ("app", "durable", "app/durable"),
        app,
        floor,
    )
    checks = [
        (
            f"run start p99 <= {DURABLE_TIMES:g}x the durable floor's",
            app.start[1] <= DURABLE_TIMES * floor.start[1],
        ),
        (
            f"added latency p99 <= {DURABLE_TIMES:g}x the durable floor's",
            app.added[1] <= DURABLE_TIMES * floor.added[1],
        ),
        ("nothing lost (app and durable floor)", app.lost == 0 and floor.lost == 0),
    ]
    print()
    for name, met in checks:
        print(f"target: {name}: {'met' if met else 'MISSED'}")
    return all(met for _, met in checks)


def beside(web: Summary, workers: Summary) -> bool:
    """Runs on workers beside runs in the web process (the same load, one after the other)."""
    side_by_side(
        "runs on workers against runs in the web process (Redis channel layer both)",
        ("workers", "in-process", "ratio"),
        workers,
        web,
    )
    ok = workers.lost == 0 and web.lost == 0
    print(f"\ntarget: nothing lost (both): {'met' if ok else 'MISSED'}")
    return ok


def measure(
    args: argparse.Namespace,
    app: str,
    floor: bool,
    on_workers: bool = False,
    telemetry: tuple[bool, Sink] | None = None,
) -> Summary:
    """One server's pass: a fresh database, the servers (and the workers running its runs,
    ``on_workers``), both scenarios; the processes stopped. ``telemetry``: traces and metrics
    both on (to the sink) or both off."""
    query = f"?conn_max_age={args.conn_max_age}" if args.conn_max_age is not None else ""
    trace = str(Path(args.start_trace).resolve()) if args.start_trace else ""
    with tempfile.TemporaryDirectory(prefix="relay-") as workdir:
        password = secrets.token_urlsafe(16)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": args.database_url or f"sqlite:///{workdir}/relay.sqlite3{query}",
            "REDIS_URL": REDIS_URL if args.redis else "",
            "LOG_LEVEL": "WARNING",
            "RELAY_USER": f"relay-{secrets.token_hex(4)}",
            "RELAY_PASSWORD": password,
            "RELAY_CONVERSATIONS": str(2 + args.conversations),
            # Only the app reads these (the floor has no sampler and no checkpoints).
            "RELAY_SAMPLE": str(Path(args.profile).resolve()) if args.profile else "",
            "RELAY_START_TRACE": trace if not floor else "",
            "RELAY_CHECKPOINT_SECONDS": str(args.checkpoint or ""),
            "RELAY_DB_PROCESS": str(args.db_process or "") if not floor else "",
            # Only the workers read this (``bench/relay_worker.py``).
            "RELAY_BATCH_SECONDS": "" if args.relay_batch is None else str(args.relay_batch),
            # One user holds every conversation: no per-user cap on replies at once.
            "ORKESTREL_MAX_RUNS_PER_USER": "0",
        }
        if telemetry is not None:
            env = telemetry_env(env, *telemetry)
        queue = f"orkestrel-relay-{secrets.token_hex(5)}"
        if on_workers:
            env.update(
                {
                    "ORKESTREL_RUNS_ON": "workers",
                    "CELERY_BROKER_URL": args.broker,
                    "CELERY_TASK_DEFAULT_QUEUE": queue,
                }
            )
        manage(env, "migrate", "--noinput")
        line = next(x for x in manage(env, "shell", "-c", SETUP).splitlines() if x[:6] == "RELAY ")
        setup = json.loads(line[6:])
        count = max(1, args.servers)
        servers = [start_server(env, Path(workdir), i, app) for i in range(count)]
        threads = (2 + args.conversations) // max(1, args.bench_workers) + 8
        workers = (
            start_workers(env, Path(workdir), args.bench_workers, threads) if on_workers else []
        )
        try:
            database = args.database_url.split("@")[-1] if args.database_url else "SQLite file"
            layer = "Redis channel layer" if args.redis else "in-memory channel layer"
            ports = ", ".join(str(server.port) for server in servers)
            print(f"daphne x{len(servers)} on 127.0.0.1:{ports}, {database}, {layer}")
            if workers:
                print(f"runs on {len(workers)} Celery workers ({threads} threads each)")
            changed = (
                [f"CHECKPOINT_SECONDS={args.checkpoint}"] if args.checkpoint and not floor else []
            )
            changed += [f"CONN_MAX_AGE={args.conn_max_age}"] if query else []
            if args.db_process and not floor:
                changed += [f"prepare_run in {args.db_process} child process(es)"]
            if on_workers and args.relay_batch is not None:
                changed += [f"RELAY_BATCH={args.relay_batch}"]
            if changed:
                print(f"WHAT-IF, not the app as shipped: {', '.join(changed)}")
            cookie = login(servers[0].port, env["RELAY_USER"], password)
            summary = asyncio.run(scenarios(args, servers, cookie, setup, floor))
        finally:
            for server in [*servers, *workers]:
                server.stop()
            if args.redis:
                forget_groups()
            if on_workers:
                delete_queue(args.broker, queue)
            log = "".join(server.log.read_text() for server in [*servers, *workers])
            if "Error" in log:
                name = "relay-floor-server.log" if floor else "relay-server.log"
                kept = Path(tempfile.gettempdir()) / name
                kept.write_text(log)
                print(f"\nthe server logged errors: see {kept}")
        if args.profile and not floor:
            print(f"\nserver profile written to {args.profile}")
        if trace and not floor and Path(trace).exists():
            print(f"\n{summarise(trace)}")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000, help="throughput run length")
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0, help="deltas/s per conversation")
    parser.add_argument("--seconds", type=float, default=10.0, help="stream length")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds to spread starts over")
    parser.add_argument("--timeline", action="store_true", help="print scenario 2 per second")
    parser.add_argument("--redis", action="store_true", help="use the Redis channel layer")
    parser.add_argument("--database-url", default="", help="a scratch database (default: SQLite)")
    parser.add_argument("--profile", metavar="FILE", help="write a sampled app-server profile")
    parser.add_argument(
        "--servers", type=int, default=1, help="server processes sharing the database"
    )
    parser.add_argument(
        "--no-floor", action="store_true", help="measure the app only, not the floor after it"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat app and floor, alternating which goes first; compare each figure's median",
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="also the durable floor (a transaction per start and per end): app/durable ratios",
    )
    parser.add_argument(
        "--runs-on",
        choices=("web", "workers"),
        default="web",
        help="workers: the app with runs in the web process, then on Celery workers",
    )
    parser.add_argument("--bench-workers", type=int, default=2, help="Celery workers (2)")
    parser.add_argument(
        "--telemetry",
        action="store_true",
        help="the app with traces and metrics off, then on (per --rounds): CPU per run",
    )
    parser.add_argument(
        "--broker",
        default=os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/12",
        help="the broker of --runs-on workers",
    )
    what_if = parser.add_argument_group("what-ifs (diagnosis only: they change the server)")
    what_if.add_argument("--checkpoint", type=float, help="override CHECKPOINT_SECONDS")
    what_if.add_argument(
        "--start-trace", metavar="FILE", help="time each run start's steps in the app server"
    )
    what_if.add_argument(
        "--db-process", type=int, help="run a start's database hop in N child processes"
    )
    what_if.add_argument("--conn-max-age", type=int, help="SQLite CONN_MAX_AGE (seconds)")
    what_if.add_argument(
        "--relay-batch", type=float, help="override the workers' RELAY_BATCH (seconds)"
    )
    args = parser.parse_args()

    if args.telemetry:
        return 0 if with_and_without_telemetry(args) else 1
    if args.runs_on == "workers":
        # Frames cross processes either way: the layer is Redis for both passes.
        args.redis = True
        print("== in-process: runs in the web process\n")
        web = measure(args, APP, floor=False)
        gc.collect()
        print("\n== workers: runs on Celery workers, the web process holds the sockets\n")
        workers = measure(args, APP, floor=False, on_workers=True)
        return 0 if beside(web, workers) else 1
    passes = [("app", APP)] + ([] if args.no_floor else [("floor", FLOOR)])
    passes += [("durable", DURABLE)] if args.durable else []
    summaries: dict[str, list[Summary]] = {kind: [] for kind, _ in passes}
    for round_ in range(args.rounds):
        # Rounds alternate which server goes first, so a machine getting busier or quieter
        # over the invocation weighs on both alike.
        for kind, app in passes if round_ % 2 == 0 else passes[::-1]:
            if len(passes) > 1 or args.rounds > 1:
                print(f"== {kind}: daphne {app} (round {round_ + 1} of {args.rounds})\n")
            summaries[kind].append(measure(args, app, floor=kind != "app"))
            gc.collect()  # the pass's clients, off the next pass's load generator
            if len(passes) > 1:
                print()
    if args.rounds > 1 and len(passes) > 1:
        for round_, (app_pass, floor_pass) in enumerate(zip(*summaries.values(), strict=True)):
            print(
                f"round {round_ + 1}: added p99 {app_pass.added[1] / floor_pass.added[1]:.2f}x, "
                f"run start p99 {app_pass.start[1] / floor_pass.start[1]:.2f}x the floor's"
            )
    app_summary = median_of(summaries["app"])
    if "durable" in summaries:
        durable_ok = against_durable(app_summary, summaries["app"], summaries["durable"])
        if "floor" not in summaries:
            return 0 if durable_ok else 1
    if "floor" in summaries:
        return 0 if compare(app_summary, median_of(summaries["floor"]), args.rounds) else 1
    return 0 if alone(app_summary) else 1


def with_and_without_telemetry(args: argparse.Namespace) -> bool:
    """The app with telemetry off and on, alternating over the rounds; medians compared."""
    sink = Sink()
    passes: dict[bool, list[Summary]] = {False: [], True: []}
    try:
        for round_ in range(args.rounds):
            for on in (False, True) if round_ % 2 == 0 else (True, False):
                state = "on" if on else "off"
                print(f"== telemetry {state} (round {round_ + 1} of {args.rounds})\n")
                passes[on].append(measure(args, APP, floor=False, telemetry=(on, sink)))
                gc.collect()
                print()
    finally:
        sink.close()
    return telemetry_cost(median_of(passes[False]), median_of(passes[True]), sink.spans)


if __name__ == "__main__":
    sys.exit(main())
