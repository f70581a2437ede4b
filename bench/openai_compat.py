"""OpenAI-compatible endpoints: the latency ``/v1/chat/completions`` adds over its upstream.

A fake OpenAI-compatible model server (``bench/openai_upstream.py``, its own process) streams
``--tokens`` content deltas ``--interval`` apart, each stamped with its ``time.monotonic()`` at
the write. Orkestrel runs as ``daphne orkestrel.asgi:application`` (``bench/relay.py``'s
launcher) on a fresh SQLite file, with an ``openai`` provider endpoint at that server, an
agent profile on it (its slug is the ``model``), one user and an API key. Each client holds
one kept-alive HTTP/1.1 connection and reads the SSE body as it arrives, noting
``time.monotonic()`` at each read (``--client raw``, the default: a minimal asyncio client;
``--client httpx``: the official SDKs' transport, about three times the CPU per event). Every
request is ``stream: true`` with ``stream_options.include_usage``, on both paths:

- **direct**: ``POST {upstream}/v1/chat/completions``;
- **via app**: ``POST {orkestrel}/v1/chat/completions``, ``Authorization: Bearer <key>``.

1. One stream: ``--runs`` requests per path, one at a time, the paths alternating.
2. Concurrency: ``--streams`` clients at once (starts spread over ``--ramp``), one path after
   the other.

``--telemetry`` serves the app alone with traces (to a loopback OTLP collector,
``bench/otlp_sink.py``) and metrics both off, then both on, alternating over ``--rounds``, and
sets the server's CPU per stream side by side (target: under 5 % more with both on).

``--rounds`` repeats both, alternating which path goes first. Per path: time to first token
(send -> first content delta), per-token latency (arrival - the upstream's stamp) and whether
every delta arrived, in order, ending in ``finish_reason: stop`` and ``data: [DONE]``;
"added" is via app minus direct. The processes share the machine.

Run: ``.venv/bin/python bench/openai_compat.py [--streams 100] [--rounds 2]``
(see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import relay
from openai_clients import CLIENTS, Client, Reply
from otlp_sink import Sink, telemetry_env
from relay_clients import ms, pct

type Route = Literal["direct", "app"]
ROUTES: tuple[Route, Route] = ("direct", "app")
APP = "orkestrel.asgi:application"
FLOOR = "bench.openai_floor:application"  # ``--floor``: the same wire work, nothing else
UPSTREAM = Path(__file__).resolve().parent / "openai_upstream.py"
PROFILE = "bench-openai"  # the agent profile's slug: the ``model`` clients send the app
TARGET_FIRST_P50 = 0.015  # added time to first token, one stream
TARGET_TOKEN_P99 = 0.002  # added per-token latency
CONNECTING = 20  # connections opened at once: a connect storm is not what is measured
PAUSE = 2.0  # seconds between passes: the app's last runs settle before the next starts
TELEMETRY_CPU = 0.05  # ``--telemetry``: at most this much more server CPU per stream, both on
# Run in ``manage.py shell -c``: one user, the endpoint at the fake upstream, a profile, a key.
SETUP = """
import os
from django.contrib.auth import get_user_model
from agents.models import AgentProfile, ApiKey, ProviderEndpoint
user = get_user_model().objects.create_user(os.environ["BENCH_USER"])
endpoint = ProviderEndpoint(
    name="bench-upstream", kind="openai", base_url=os.environ["BENCH_UPSTREAM"], models=["bench"]
)
endpoint.full_clean()
endpoint.save()
profile = AgentProfile(
    slug=os.environ["BENCH_PROFILE"], name="OpenAI benchmark", model="bench-upstream/bench"
)
profile.full_clean()
profile.save()
_, raw = ApiKey.objects.issue(user=user, name="openai benchmark")
print("BENCHKEY " + raw)
"""


# -- the figures ------------------------------------------------------------------------------


@dataclass
class Figures:
    """One route's figures in one scenario, over every round."""

    firsts: list[float] = field(default_factory=list)  # send -> first content delta
    heads: list[float] = field(default_factory=list)  # send -> response headers
    reached: list[float] = field(default_factory=list)  # send -> the upstream began answering
    latencies: list[float] = field(default_factory=list)  # arrival - upstream stamp
    arrivals: list[float] = field(default_factory=list)  # each token's arrival (monotonic)
    began: list[float] = field(default_factory=list)  # each concurrent pass's start
    lags: list[float] = field(default_factory=list)  # the upstream's own lateness
    streams: int = 0
    lost: int = 0  # deltas that never arrived
    broken: int = 0  # streams not complete (status, order, finish_reason, [DONE])
    no_usage: int = 0
    errors: list[str] = field(default_factory=list)
    cpu: list[tuple[float, ...]] = field(default_factory=list)  # shares of a core
    per_run: list[float] = field(default_factory=list)  # app server CPU seconds per stream

    def add(self, reply: Reply, count: int) -> None:
        self.streams += 1
        self.firsts += [reply.first - reply.sent] if not math.isnan(reply.first) else []
        self.heads += [reply.headers - reply.sent] if not math.isnan(reply.headers) else []
        if reply.tokens and reply.tokens[0][1] == 0:
            # Delta 0 is due at the upstream's start, so its stamp minus its lag is that start:
            # the part of the first token spent before the upstream was asked.
            _, _, stamp, lag = reply.tokens[0]
            self.reached.append(stamp - lag - reply.sent)
        self.latencies += [at - stamp for at, _, stamp, _ in reply.tokens]
        self.arrivals += [at for at, _, _, _ in reply.tokens]
        self.lags += [lag for _, _, _, lag in reply.tokens]
        self.lost += count - len({i for _, i, _, _ in reply.tokens} & set(range(count)))
        self.no_usage += reply.status == 200 and not reply.usage
        if not reply.complete(count):
            self.broken += 1
            why = reply.error or f"status {reply.status}, finish {reply.finish}, done {reply.done}"
            self.errors.append(" ".join(why.split()))


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """CPU seconds of a process (ended threads included), or of one of its threads."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the scenarios ----------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    urls: dict[Route, str]
    key: str
    app_pid: int
    upstream_pid: int
    figures: dict[tuple[str, Route], Figures] = field(default_factory=dict)

    def body(self, route: Route, count: int, interval: float) -> dict[str, Any]:
        return {
            "model": PROFILE if route == "app" else "bench",
            "messages": [{"role": "user", "content": f"stream {count} {interval:g}"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def into(self, scenario: str, route: Route) -> Figures:
        return self.figures.setdefault((scenario, route), Figures())

    async def connect(self, route: Route) -> Client:
        client = CLIENTS[self.args.client](self.urls[route], self.key)
        await client.open("/healthz" if route == "app" else "/v1/models")
        return client

    async def warm(self, route: Route) -> Reply:
        """One short stream: imports, the first queries, the app's upstream connection."""
        client = await self.connect(route)
        try:
            reply = Reply()
            await client.post(self.body(route, 20, 0), reply)
            return reply
        finally:
            await client.aclose()

    async def one_stream(self, routes: list[Route]) -> None:
        args = self.args
        held = {route: await self.connect(route) for route in routes}
        try:
            for _ in range(args.runs):
                for route in routes:
                    reply = Reply()
                    await held[route].post(self.body(route, args.tokens, args.interval), reply)
                    self.into("one", route).add(reply, args.tokens)
                    await asyncio.sleep(0.05)
        finally:
            await asyncio.gather(*(client.aclose() for client in held.values()))

    async def concurrent(self, route: Route) -> None:
        args = self.args
        gate = asyncio.Semaphore(CONNECTING)

        async def opened() -> Client:
            async with gate:
                return await self.connect(route)

        clients = await asyncio.gather(*(opened() for _ in range(args.streams)))
        replies = [Reply() for _ in clients]
        body = self.body(route, args.tokens, args.interval)
        cpu0 = self.cpu()
        start = time.monotonic()
        tasks = []
        for index, (client, reply) in enumerate(zip(clients, replies, strict=True)):
            delay = start + index * args.ramp / len(clients) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(client.post(body, reply)))
        # Bounded: a stream that never ends is reported as broken, not waited for forever.
        _, late = await asyncio.wait(tasks, timeout=args.ramp + args.tokens * args.interval + 60)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        elapsed = time.monotonic() - start
        cpu1 = self.cpu()
        await asyncio.gather(*(client.aclose() for client in clients))
        figures = self.into("many", route)
        figures.began.append(start)
        for task, reply in zip(tasks, replies, strict=True):
            reply.error = reply.error or ("unfinished" if task in late else "")
            figures.add(reply, args.tokens)
        figures.cpu.append(tuple((b - a) / elapsed for a, b in zip(cpu0, cpu1, strict=True)))
        figures.per_run.append((cpu1[0] - cpu0[0]) / len(clients))

    def cpu(self) -> tuple[float, float, float, float]:
        """CPU seconds: the app server, its event-loop thread, the upstream, this process."""
        return (
            cpu_seconds(self.app_pid),
            cpu_seconds(self.app_pid, self.app_pid),
            cpu_seconds(self.upstream_pid),
            time.process_time(),
        )


async def scenarios(bench: Bench, routes: list[Route]) -> list[Route]:
    """Every round of both scenarios; returns the routes that answered their warm-up."""
    args = bench.args
    answering: list[Route] = []
    for route in routes:
        reply = await bench.warm(route)
        if reply.complete(20):
            answering.append(route)
        else:
            if route == "app" and reply.status in (404, 405):
                print("! the app does not serve POST /v1/chat/completions yet: direct only")
                continue
            why = " ".join((reply.error or f"finish {reply.finish}, done {reply.done}").split())
            print(f"! {route}: the warm-up stream failed (HTTP {reply.status}): {why[:200]}")
    if not answering:
        return answering
    # The load generator holds every delta it received; the collector's full passes over
    # that heap would stall every client at once and show as the path's latency.
    gc.disable()
    for index in range(args.rounds):
        order = answering if index % 2 == 0 else answering[::-1]
        label = f" (round {index + 1} of {args.rounds})" if args.rounds > 1 else ""
        if args.runs:
            print(f"1. one stream{label}: {args.runs} runs per route, one at a time")
            await bench.one_stream(order)
        if args.streams:
            print(f"2. {args.streams} streams{label}, starts spread over {args.ramp:g} s")
            for route in order:
                gc.collect()
                await asyncio.sleep(PAUSE)
                await bench.concurrent(route)
    gc.enable()
    return answering


# -- the report -------------------------------------------------------------------------------


def _cell(value: float) -> str:
    return f"{'-':>10}" if math.isnan(value) else ms(value)


def timeline(figures: Figures, step: float = 0.25) -> None:
    """Per-token latency by the time since its pass began (``--timeline``; one pass)."""
    began = figures.began[0]
    end = figures.began[1] if len(figures.began) > 1 else math.inf
    buckets: dict[int, list[float]] = {}
    for at, latency in zip(figures.arrivals, figures.latencies, strict=True):
        if at >= end:
            continue
        buckets.setdefault(int((at - began) / step), []).append(latency)
    print(f"\nper-token latency via app by arrival, {step * 1000:g} ms buckets (first pass)")
    for index in sorted(buckets):
        values = buckets[index]
        print(
            f"  {index * step:5.2f} s  {len(values):5d} tokens  "
            f"p50 {ms(pct(values, 0.5))}  p99 {ms(pct(values, 0.99))}"
        )


def report(bench: Bench, answering: list[Route]) -> bool:
    """The table, direct / via app / added, and each target met or missed."""
    args, found = bench.args, bench.figures
    blank = Figures()
    print(f"\n{'':<34} {'direct':>10}   {'via app':>10}   {'added':>10}")
    titles = {
        "one": f"1 stream ({args.runs * args.rounds} runs per route)",
        "many": f"{args.streams} concurrent streams ({args.rounds} pass(es) per route)",
    }
    added: dict[tuple[str, str], float] = {}
    for scenario, title in titles.items():
        direct, app = found.get((scenario, "direct"), blank), found.get((scenario, "app"), blank)
        if not direct.streams and not app.streams:
            continue
        print(title)
        for name, values in (
            ("first token p50", lambda f: pct(f.firsts, 0.5)),
            ("first token p99", lambda f: pct(f.firsts, 0.99)),
            ("per token p50", lambda f: pct(f.latencies, 0.5)),
            ("per token p99", lambda f: pct(f.latencies, 0.99)),
            ("response headers p50", lambda f: pct(f.heads, 0.5)),
            ("upstream reached p50 (send -> asked)", lambda f: pct(f.reached, 0.5)),
            ("upstream reached p99", lambda f: pct(f.reached, 0.99)),
            ("upstream lag p99 (not in the above)", lambda f: pct(f.lags, 0.99)),
        ):
            mine, base = values(app), values(direct)
            added[scenario, name] = mine - base
            print(f"  {name:<36}{_cell(base)}   {_cell(mine)}   {_cell(mine - base)}")
        for name, values in (
            ("streams", lambda f: f.streams),
            ("deltas lost", lambda f: f.lost),
            ("streams broken", lambda f: f.broken),
            ("usage chunk missing", lambda f: f.no_usage),
        ):
            print(f"  {name:<36}{values(direct):>10}   {values(app):>10}")
        for route, figures in (("direct", direct), ("app", app)):
            for error in figures.errors[:3]:
                print(f"  ! {route}: {error[:150]}")
            if figures.cpu:
                shares = [
                    sum(column) / len(figures.cpu) for column in zip(*figures.cpu, strict=True)
                ]
                print(
                    f"  CPU while {route:<6} app server {shares[0]:4.0%} (loop {shares[1]:4.0%}), "
                    f"upstream {shares[2]:4.0%}, clients {shares[3]:4.0%} of a core"
                )
    measured = "app" in answering
    many = [found.get(("many", route), blank) for route in ROUTES]
    checks = [
        (
            f"added first token p50 < {TARGET_FIRST_P50 * 1000:g} ms (1 stream)",
            added.get(("one", "first token p50"), math.nan) < TARGET_FIRST_P50,
        ),
        (
            f"added per token p99 < {TARGET_TOKEN_P99 * 1000:g} ms (1 stream)",
            added.get(("one", "per token p99"), math.nan) < TARGET_TOKEN_P99,
        ),
        (
            f"added per token p99 < {TARGET_TOKEN_P99 * 1000:g} ms ({args.streams} streams)",
            added.get(("many", "per token p99"), math.nan) < TARGET_TOKEN_P99,
        ),
        (
            f"nothing lost at {args.streams} streams (both routes)",
            all(f.streams == args.streams * args.rounds and not f.lost + f.broken for f in many),
        ),
    ]
    print()
    for name, met in checks:
        verdict = "met" if met else ("MISSED" if measured else "not measured")
        print(f"target: {name}: {verdict}")
    return measured and all(met for _, met in checks)


# -- the processes ----------------------------------------------------------------------------


def start_upstream(args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    command = [sys.executable, str(UPSTREAM), "--tokens", str(args.tokens)]
    process = subprocess.Popen(
        [*command, "--interval", str(args.interval)], stdout=subprocess.PIPE, stderr=log.open("wb")
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("LISTENING "):
        process.kill()
        raise SystemExit(f"the upstream did not start:\n{log.read_text()[-3000:]}")
    return process, int(line.split()[1])


def serve(
    args: argparse.Namespace,
    app: str,
    routes: list[Route],
    telemetry: tuple[bool, Sink] | None = None,
) -> tuple[bool, Bench | None]:
    """One server's pass over both scenarios: whether its targets were met, and its figures.
    ``telemetry``: traces and metrics both on (to the sink) or both off."""
    ok = False
    bench: Bench | None = None
    with tempfile.TemporaryDirectory(prefix="openai-compat-") as workdir:
        upstream, upstream_port = start_upstream(args, Path(workdir) / "upstream.log")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": f"sqlite:///{workdir}/openai.sqlite3",
            "REDIS_URL": "",
            "LOG_LEVEL": "WARNING",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "API_THROTTLE_RATE": args.throttle,
            # The benchmark's one user runs every stream at once (0: no per-user cap).
            "ORKESTREL_MAX_RUNS_PER_USER": "0",
            "BENCH_USER": f"openai-{secrets.token_hex(4)}",
            "BENCH_UPSTREAM": f"http://127.0.0.1:{upstream_port}/v1",
            "BENCH_PROFILE": PROFILE,
            "RELAY_SAMPLE": str(Path(args.profile).resolve()) if args.profile else "",
        }
        if telemetry is not None:
            env = telemetry_env(env, *telemetry)
        server = None
        try:
            relay.manage(env, "migrate", "--noinput")
            lines = relay.manage(env, "shell", "-c", SETUP).splitlines()
            key = next(x for x in lines if x.startswith("BENCHKEY "))[9:]
            server = relay.start_server(env, Path(workdir), app=app)
            print(
                f"daphne {app} on 127.0.0.1:{server.port} (SQLite file, in-memory layer), "
                f"upstream on 127.0.0.1:{upstream_port}, {args.client} clients; "
                f"{os.cpu_count()} cores, load average "
                f"{os.getloadavg()[0]:.2f} before start"
            )
            print(
                f"each stream: {args.tokens} deltas {args.interval * 1000:g} ms apart "
                f"({1 / args.interval:g}/s) on the upstream's absolute schedule\n"
                if args.interval
                else f"each stream: {args.tokens} deltas, no delay\n"
            )
            urls: dict[Route, str] = {
                "direct": f"http://127.0.0.1:{upstream_port}",
                "app": f"http://127.0.0.1:{server.port}",
            }
            bench = Bench(args, urls, key, server.process.pid, upstream.pid)
            answering = asyncio.run(scenarios(bench, routes))
            ok = report(bench, answering)
            many = bench.figures.get(("many", "app"))
            if args.timeline and many is not None and many.began:
                timeline(many)
        finally:
            if server is not None:
                server.stop()
                log = server.log.read_text()
                if "Error" in log or "Traceback" in log:
                    kept = Path(tempfile.gettempdir()) / "openai-compat-server.log"
                    kept.write_text(log)
                    print(f"\nthe server logged errors: see {kept}")
            upstream.terminate()
            upstream.wait()
    return ok, bench


def with_and_without_telemetry(args: argparse.Namespace, app: str) -> bool:
    """The app alone with traces and metrics off, then on, alternating over ``--rounds``: the
    server's CPU per stream (the concurrent scenario) side by side."""
    sink = Sink()
    once = argparse.Namespace(**{**vars(args), "rounds": 1})
    per_run: dict[bool, list[float]] = {False: [], True: []}
    latency: dict[bool, list[float]] = {False: [], True: []}
    try:
        for round_ in range(args.rounds):
            for on in (False, True) if round_ % 2 == 0 else (True, False):
                print(f"== telemetry {'on' if on else 'off'} (round {round_ + 1} of {args.rounds})")
                _, bench = serve(once, app, ["app"], (on, sink))
                many = bench.figures.get(("many", "app")) if bench is not None else None
                if many is not None:
                    per_run[on] += many.per_run
                    latency[on] += many.latencies
                print()
    finally:
        sink.close()
    if not per_run[False] or not per_run[True]:
        print("! no concurrent pass measured")
        return False
    off, on = statistics.median(per_run[False]), statistics.median(per_run[True])
    print("telemetry on (traces to a loopback OTLP collector, metrics) against off")
    print(f"  {'':<30} {'on':>10}   {'off':>10}   {'on/off':>8}")
    print(
        f"  {'server CPU per stream':<30} {on * 1000:7.2f} ms   {off * 1000:7.2f} ms   "
        f"{on / off:7.3f}x"
    )
    for name, share in (("per token p50", 0.5), ("per token p99", 0.99)):
        mine, base = pct(latency[True], share), pct(latency[False], share)
        print(f"  {name:<30} {_cell(mine)}   {_cell(base)}   {mine / base:7.2f}x")
    print(f"  ({sink.spans:,} spans reached the collector)")
    more = on / off - 1
    ok = more < TELEMETRY_CPU
    print(
        f"\ntarget: CPU per stream with telemetry on < +{TELEMETRY_CPU:.0%} ({more:+.1%}): "
        f"{'met' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100, help="concurrent streams")
    parser.add_argument("--tokens", type=int, default=100, help="deltas per stream")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--runs", type=int, default=20, help="one-stream runs per route")
    parser.add_argument("--rounds", type=int, default=1, help="repeat, alternating the order")
    parser.add_argument("--ramp", type=float, default=0.5, help="seconds to spread starts over")
    parser.add_argument("--only", choices=ROUTES, help="one route (e.g. to profile it)")
    parser.add_argument("--client", choices=CLIENTS, default="raw", help="the load generator")
    parser.add_argument("--throttle", default="100000/min", help="the server's API_THROTTLE_RATE")
    parser.add_argument("--profile", metavar="FILE", help="write a sampled app-server profile")
    parser.add_argument("--timeline", action="store_true", help="100 streams via app over time")
    parser.add_argument(
        "--telemetry",
        action="store_true",
        help="the app alone with traces and metrics off, then on (per --rounds): CPU per stream",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="serve bench/openai_floor.py (a bare proxy) in the app's place",
    )
    args = parser.parse_args()
    # The sampler lives in ``bench/relay_app.py`` (the real app; its model swap does not touch
    # the ``openai`` endpoint this benchmark's profile uses).
    app = "bench.relay_app:application" if args.profile else APP
    if args.floor:
        app = FLOOR
    routes: list[Route] = [args.only] if args.only else list(ROUTES)
    if args.telemetry:
        return 0 if with_and_without_telemetry(args, app) else 1
    ok, _ = serve(args, app, routes)
    if args.profile:
        print(f"\nserver profile written to {args.profile}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
