"""SSE relay: the REST API's event streams against the websocket relay, on one Daphne server.

The server, the stamping model and the setup are ``bench/relay.py``'s (imported, not copied):
``daphne bench.relay_app:application`` in a subprocess on a fresh SQLite file, the demo
profile, one user (plus an API key for the SSE clients). SSE clients are ``httpx`` over
HTTP/1.1, one kept-alive connection per stream (``bench/sse_clients.py``), each sending
``POST /api/conversations/{id}/messages/`` with ``Accept: text/event-stream`` and reading the
run's frames from that response. Websocket clients are ``bench/relay_clients.py``'s.

1. Time to first token: ``--runs`` runs one at a time, alternating SSE and websocket, each in
   a fresh conversation: the POST (or the socket's ``send``) to the first ``token`` event.
2. Throughput: one stream of ``--deltas`` deltas with no delay, per transport.
3. Concurrency: ``--conversations`` streams x ``--rate`` deltas/s for ``--seconds``, per
   transport: added latency (arrival - the model's stamp), frames/s, nothing lost.

Both transports' figures are printed side by side with their ratio (SSE / websocket).
``--durable`` then runs scenario 3 over SSE against the durable floor (``bench/sse_floor.py``:
a transaction per start and per end, the frames straight to the response) and prints the app
beside it (app / durable).

Run: ``.venv/bin/python bench/sse.py [--rounds 2] [--only sse] [--profile FILE]``
(see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import relay
from relay_clients import Client, Figures, ms, pct, spread
from sse_clients import Stream, close, open_stream
from start_steps import summarise

TRANSPORTS = ("sse", "websocket")
# The least a durable run over SSE needs (``--durable``): a transaction per start and per end.
DURABLE = "bench.sse_floor:application"
# ``relay.SETUP`` (the demo profile, a user, the conversations), then an API key for the user.
SETUP = (
    relay.SETUP
    + """
from agents.models import ApiKey
_, raw = ApiKey.objects.issue(user=user, name="sse benchmark")
print("SSEKEY " + raw)
"""
)
# The first-token runs: five deltas 10 ms apart, the first due at once.
FIRST_COUNT, FIRST_INTERVAL = 5, 0.01
FIRST_TOKEN_RUN = f"relay {FIRST_COUNT} {FIRST_INTERVAL}"
PAUSE = 2.0  # seconds between scenarios: the last runs' settles land before the next starts


@dataclass
class Result:
    """One transport's figures over every round."""

    first_tokens: list[float] = field(default_factory=list)  # send -> first token frame
    starts: list[float] = field(default_factory=list)  # send -> started frame (sequential)
    heads: list[float] = field(default_factory=list)  # POST -> response headers (SSE only)
    gets: list[float] = field(default_factory=list)  # SSE only: GET /api/runs/{id}/, the floor
    healths: list[float] = field(default_factory=list)  # SSE only: GET /healthz (plain Django)
    one: list[Figures] = field(default_factory=list)  # the throughput runs
    many: list[Figures] = field(default_factory=list)  # the concurrency runs
    spans: list[float] = field(default_factory=list)  # concurrency: first stamp -> last frame
    cpu: list[tuple[float, float, float]] = field(default_factory=list)  # loop, other, client
    seconds: list[float] = field(default_factory=list)  # concurrency: server CPU seconds
    threads: list[int] = field(default_factory=list)  # concurrency: the server's peak threads
    lost: int = 0  # over every scenario, the first-token runs included


@dataclass
class Bench:
    args: argparse.Namespace
    server: relay.Server
    cookie: str
    key: str
    ids: list[str]
    results: dict[str, Result] = field(default_factory=lambda: {t: Result() for t in TRANSPORTS})

    def take(self, count: int) -> list[str]:
        taken, self.ids = self.ids[:count], self.ids[count:]
        assert len(taken) == count, "setup created too few conversations"
        return taken

    @property
    def port(self) -> int:
        return self.server.port

    # -- the two transports, one run shape ------------------------------------------------------

    async def websocket(
        self, ids: list[str], count: int, interval: float, ramp: float
    ) -> tuple[list[Client], float]:
        return await relay.stream(self.port, self.cookie, ids, count, interval, ramp)

    async def sse(
        self, ids: list[str], count: int, interval: float, ramp: float
    ) -> tuple[list[Stream], float]:
        """``relay.stream`` for SSE: connections first, then the POSTs spread over ``ramp``."""
        gate = asyncio.Semaphore(relay.CONNECTING)

        async def opened(conversation_id: str) -> Stream:
            async with gate:
                return await open_stream(self.port, self.key, conversation_id)

        begun = time.monotonic()
        streams = await asyncio.gather(*(opened(cid) for cid in ids))
        start = time.monotonic()
        if len(streams) > 1:
            print(
                f"   connections        {len(streams)} open (GET /healthz), "
                f"in {start - begun:.1f} s"
            )
        tasks = []
        for index, stream in enumerate(streams):
            delay = start + index * ramp / len(streams) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(stream.post(f"relay {count} {interval}")))
        # Bounded like relay.stream: a stream that never ends is reported, not waited for.
        _, late = await asyncio.wait(tasks, timeout=ramp + count * interval + 120)
        for task in late:
            task.cancel()
        elapsed = time.monotonic() - start
        await close(streams)
        failed = [stream for stream in streams if stream.error]
        for stream in failed[:3]:
            print(f"   ! {stream.dropped} {' '.join(stream.error.split())[:160]}")
        if len(failed) > 3:
            print(f"   ! ... {len(failed) - 3} more streams failed")
        return streams, elapsed

    async def run(
        self, transport: str, ids: list[str], count: int, interval: float, ramp: float
    ) -> tuple[list[Stream] | list[Client], float]:
        if transport == "sse":
            return await self.sse(ids, count, interval, ramp)
        return await self.websocket(ids, count, interval, ramp)

    # -- the scenarios --------------------------------------------------------------------------

    async def first_tokens(self, transports: list[str]) -> None:
        """One run at a time, the transports alternating; each run in a fresh conversation."""
        held = await open_stream(self.port, self.key, "")  # one kept-alive connection
        try:
            for _ in range(self.args.runs):
                for transport in transports:
                    (cid,) = self.take(1)
                    if transport == "sse":
                        client = Stream(cid, held.http)
                        await client.post(FIRST_TOKEN_RUN)
                        await self.floor(held, client)
                    else:
                        (client,), _ = await self.websocket([cid], FIRST_COUNT, FIRST_INTERVAL, 0)
                    self.first_token(transport, client, FIRST_COUNT)
                    await asyncio.sleep(0.05)
        finally:
            await close([held])

    async def floor(self, held: Stream, client: Stream) -> None:
        """The API's cost per request: an authenticated ``GET`` of the run just streamed."""
        run = next((f["run"] for _, f in client.frames if f.get("type") == "started"), None)
        if run is None:
            return
        result = self.results["sse"]
        for path, into in ((f"/api/runs/{run}/", result.gets), ("/healthz", result.healths)):
            begun = time.monotonic()
            answer = await held.http.get(path)
            if answer.status_code == 200:
                into.append(time.monotonic() - begun)

    def first_token(self, transport: str, client: Stream | Client, count: int) -> None:
        result = self.results[transport]
        sent = client.sent
        frames = client.frames
        firsts = [at for at, f in frames if f.get("type") == "token"][:1]
        result.first_tokens += [at - sent for at in firsts]
        result.starts += [at - sent for at, f in frames if f.get("type") == "started"][:1]
        if isinstance(client, Stream):
            result.heads.append(client.headers - sent)
            result.lost += client.bad_ids
        check = Figures()
        check.add(client, count)
        result.lost += check.lost

    async def throughput(self, transport: str) -> None:
        deltas = self.args.deltas
        clients, _ = await self.run(transport, self.take(1), deltas, 0, 0)
        one = Figures()
        one.add(clients[0], deltas)
        result = self.results[transport]
        result.one.append(one)
        result.lost += one.lost + getattr(clients[0], "bad_ids", 0)
        if not one.firsts:
            print(f"   {transport}: no token frame arrived ({clients[0].frames[-1:]})")
            return
        span = one.last_receive - one.firsts[0]
        print(
            f"   {transport:<10} {one.deltas / span:9,.0f} deltas/s, "
            f"{one.frames / span:8,.0f} frames/s, added {spread(one.latencies)}, "
            f"lost {one.lost}"
        )

    async def concurrency(self, transport: str) -> None:
        args = self.args
        count = round(args.rate * args.seconds)
        ids = self.take(args.conversations)
        print(f"   {transport}")
        (loop0, rest0), cpu_client = cpu(self.server), time.process_time()
        threads = asyncio.create_task(peak_threads(self.server))
        clients, elapsed = await self.run(transport, ids, count, 1 / args.rate, args.ramp)
        (loop1, rest1), cpu_client = cpu(self.server), time.process_time() - cpu_client
        threads.cancel()
        peak = await threads
        many = Figures()
        for client in clients:
            many.add(client, count)
        result = self.results[transport]
        result.many.append(many)
        result.lost += many.lost + sum(getattr(c, "bad_ids", 0) for c in clients)
        chunks = sum(getattr(c, "chunks", 0) for c in clients)
        span = many.last_receive - min(many.firsts, default=many.last_receive)
        result.spans.append(span)
        shares = ((loop1 - loop0) / elapsed, (rest1 - rest0) / elapsed, cpu_client / elapsed)
        result.cpu.append(shares)
        result.seconds.append(loop1 - loop0 + rest1 - rest0)
        print(f"   run start          {spread(many.starts)}  (send -> started frame)")
        print(f"   added latency      {spread(many.latencies)}  (delta stamp -> client)")
        for name, window, latencies in many.phases():
            if window > 0:
                print(f"   {name:<18} {spread(latencies)}  (added, over {window:.1f} s)")
        print(f"   provider lag       {spread(many.lags)}  (loop lateness, not in the above)")
        if args.timeline:
            many.timeline(min(client.sent for client in clients))
        rate = many.frames / span if span > 0 else math.nan
        print(
            f"   frames             {many.frames:,} token frames ({rate:,.0f}/s), "
            f"{many.deltas / max(many.frames, 1):.2f} deltas each"
            + (f", {many.frames / chunks:.2f} events per body chunk read" if chunks else "")
        )
        print(
            f"   lost               {many.lost_frames} frames (seq gaps), {many.lost_deltas} "
            f"deltas, {many.broken} runs with wrong text, {many.unfinished} unfinished, "
            f"{many.dropped} streams broken"
        )
        print(
            f"   CPU                server loop {shares[0]:4.0%}, other threads "
            f"{shares[1]:4.0%}, clients {shares[2]:4.0%} of a core ({elapsed:.1f} s wall)"
        )
        print(f"   server threads     at most {peak} (sampled every 0.2 s)\n")
        result.threads.append(peak)


def cpu(server: relay.Server) -> tuple[float, float]:
    """CPU seconds of the server's event-loop thread and of all its other threads, ended ones
    included (``relay.Server.cpu`` sums the live threads: a per-request thread that has
    exited drops out of it, and each SSE request has its own).
    """
    tick = os.sysconf("SC_CLK_TCK")
    pid = server.process.pid

    def seconds(stat: Path) -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    main = seconds(Path(f"/proc/{pid}/task/{pid}/stat"))
    return main, seconds(Path(f"/proc/{pid}/stat")) - main


async def peak_threads(server: relay.Server) -> int:
    """The most threads the server had at once, sampled until cancelled."""
    peak = 0
    try:
        while True:
            peak = max(peak, len(os.listdir(f"/proc/{server.process.pid}/task")))
            await asyncio.sleep(0.2)
    except asyncio.CancelledError:
        return peak


# -- the report -------------------------------------------------------------------------------


def _merged(figures: list[Figures]) -> Figures:
    merged = Figures()
    for one in figures:
        merged.latencies += one.latencies
        merged.starts += one.starts
        merged.frames += one.frames
        merged.deltas += one.deltas
    return merged


def compare(results: dict[str, Result], transports: list[str], ratio: str = "SSE / ws") -> None:
    """Both transports side by side: SSE, websocket, SSE / websocket (or the app's SSE beside
    the durable floor's: ``ratio`` names the last column)."""

    def rows() -> list[tuple[str, list[float], str]]:
        out: list[tuple[str, list[float], str]] = []
        for name, values in (
            ("time to first token p50", lambda r: pct(r.first_tokens, 0.5)),
            ("time to first token p99", lambda r: pct(r.first_tokens, 0.99)),
            ("started frame p50 (sequential)", lambda r: pct(r.starts, 0.5)),
        ):
            out.append((name, [values(results[t]) for t in transports], "ms"))
        one = {t: results[t].one for t in transports}
        if all(one.values()):
            out.append(
                (
                    "one stream, deltas/s",
                    [
                        sum(f.deltas / (f.last_receive - f.firsts[0]) for f in one[t]) / len(one[t])
                        if all(f.firsts for f in one[t])
                        else math.nan
                        for t in transports
                    ],
                    "/s",
                )
            )
        many = {t: _merged(results[t].many) for t in transports}
        if all(results[t].many for t in transports):
            spans = {t: sum(results[t].spans) for t in transports}
            for name, values, unit in (
                ("concurrent: run start p50", lambda t: pct(many[t].starts, 0.5), "ms"),
                ("concurrent: run start p99", lambda t: pct(many[t].starts, 0.99), "ms"),
                ("concurrent: added latency p50", lambda t: pct(many[t].latencies, 0.5), "ms"),
                ("concurrent: added latency p99", lambda t: pct(many[t].latencies, 0.99), "ms"),
                ("concurrent: frames/s", lambda t: many[t].frames / spans[t], "/s"),
                ("concurrent: deltas/s", lambda t: many[t].deltas / spans[t], "/s"),
                ("server CPU per token frame", lambda t: _per_frame(results[t]), "us"),
                ("server loop CPU", lambda t: _mean(results[t].cpu, 0), "%"),
                ("server other threads CPU", lambda t: _mean(results[t].cpu, 1), "%"),
                ("load generator CPU", lambda t: _mean(results[t].cpu, 2), "%"),
                ("server threads (peak)", lambda t: float(max(results[t].threads)), ""),
            ):
                out.append((name, [values(t) for t in transports], unit))
        out.append(("lost (all scenarios)", [float(results[t].lost) for t in transports], ""))
        return out

    print(
        f"{'':34}"
        + "".join(f"{t:>14}" for t in transports)
        + (f"   {ratio}" if len(transports) == 2 else "")
    )
    for name, values, unit in rows():
        cells = "".join(f"{_cell(v, unit):>14}" for v in values)
        ratio = ""
        if len(values) == 2 and values[1] and not math.isnan(values[0] + values[1]):
            ratio = f"   {values[0] / values[1]:8.2f}x"
        print(f"{name:34}{cells}{ratio}")


def _per_frame(result: Result) -> float:
    """Server CPU seconds (every thread) per token frame over the concurrency runs."""
    spent = sum(result.seconds)
    frames = sum(f.frames for f in result.many)
    return spent / frames if frames else math.nan


def _mean(values: list[tuple[float, float, float]], index: int) -> float:
    return sum(v[index] for v in values) / len(values) if values else math.nan


def _cell(value: float, unit: str) -> str:
    if math.isnan(value):
        return "-"
    if unit == "ms":
        return f"{value * 1000:.1f} ms"
    if unit == "us":
        return f"{value * 1e6:.0f} us"
    if unit == "%":
        return f"{value:.0%}"
    if unit == "/s":
        return f"{value:,.0f}/s"
    return f"{value:g}"


# -- the whole benchmark ----------------------------------------------------------------------


async def scenarios(bench: Bench, transports: list[str]) -> bool:
    args = bench.args
    # As relay.py: the load generator keeps every frame, and its collector's full passes over
    # that heap would stall every client at once and show as relay latency.
    gc.disable()
    for transport in transports:  # warm-up: imports, first queries, DRF's first request
        await bench.run(transport, bench.take(1), 200, 0, 0)
    for index in range(args.rounds):
        order = transports if index % 2 == 0 else transports[::-1]
        label = f" (round {index + 1} of {args.rounds})" if args.rounds > 1 else ""
        if args.runs:
            print(
                f"1. time to first token{label}: {args.runs} runs per transport, one at a time, "
                f"'{FIRST_TOKEN_RUN}'"
            )
            done = {t: len(bench.results[t].first_tokens) for t in order}
            await bench.first_tokens(list(order))
            for transport in order:
                result, first = bench.results[transport], done[transport]
                heads, gets, healths = (
                    result.heads[first:],
                    result.gets[first:],
                    result.healths[first:],
                )
                print(
                    f"   {transport:<10} first token {spread(result.first_tokens[first:])}; "
                    f"started p50 {ms(pct(result.starts[first:], 0.5))}"
                    + (f"; headers p50 {ms(pct(heads, 0.5))}" if heads else "")
                )
                if gets:
                    print(
                        f"   {'':<10} GET /api/runs/{{id}}/ afterwards (the API's cost per "
                        f"request): p50 {ms(pct(gets, 0.5))}  p99 {ms(pct(gets, 0.99))}"
                    )
                    print(
                        f"   {'':<10} GET /healthz afterwards (a plain Django view): "
                        f"p50 {ms(pct(healths, 0.5))}  p99 {ms(pct(healths, 0.99))}"
                    )
            print()
        if args.deltas:
            print(f"2. throughput{label}: one stream, {args.deltas:,} deltas, no delay")
            for transport in order:
                await bench.throughput(transport)
            print()
        if args.conversations:
            count = round(args.rate * args.seconds)
            print(
                f"3. concurrency{label}: {args.conversations} streams x {count} deltas at "
                f"{args.rate:g}/s (starts spread over {args.ramp:g} s)"
            )
            for transport in order:
                await asyncio.sleep(PAUSE)
                await bench.concurrency(transport)
    compare(bench.results, list(transports))
    ok = True
    for transport in transports:
        result = bench.results[transport]
        p99 = pct(_merged(result.many).latencies, 0.99) if result.many else 0.0
        met = result.lost == 0 and p99 < relay.TARGET_P99
        ok = ok and met
        print(
            f"target ({transport}): nothing lost, p99 added latency < "
            f"{ms(relay.TARGET_P99).strip()}: {'met' if met else 'MISSED'}"
        )
    return ok


def against_durable(
    args: argparse.Namespace, env: dict[str, str], workdir: Path, app: Bench
) -> bool:
    """Scenario 3 over SSE against the durable floor on the same database, after the app;
    the two side by side with app / durable."""
    server = relay.start_server(env, workdir, 1, DURABLE)
    try:
        print(f"\n== the durable floor: daphne {DURABLE} on 127.0.0.1:{server.port}\n")
        floor = Bench(args, server, "", app.key, app.ids)

        async def passes() -> None:
            gc.disable()
            await floor.run("sse", floor.take(1), 200, 0, 0)  # warm-up
            for _ in range(args.rounds):
                await asyncio.sleep(PAUSE)
                await floor.concurrency("sse")

        asyncio.run(passes())
    finally:
        server.stop()
        log = server.log.read_text()
        if "Error" in log:
            kept = Path(tempfile.gettempdir()) / "sse-durable-server.log"
            kept.write_text(log)
            print(f"\nthe durable floor logged errors: see {kept}")
    results = {"app": app.results["sse"], "durable": floor.results["sse"]}
    print("SSE, the app against the durable floor (scenario 3)")
    compare(results, ["app", "durable"], "app / durable")
    mine, base = _merged(results["app"].many), _merged(results["durable"].many)
    checks = [
        (
            "run start p99 <= 2x the durable floor's",
            pct(mine.starts, 0.99) <= 2 * pct(base.starts, 0.99),
        ),
        (
            "added latency p99 <= 2x the durable floor's",
            pct(mine.latencies, 0.99) <= 2 * pct(base.latencies, 0.99),
        ),
        ("server threads (peak) <= 32", max(results["app"].threads) <= 32),
        ("nothing lost (durable floor)", results["durable"].lost == 0),
    ]
    for name, met in checks:
        print(f"target (SSE): {name}: {'met' if met else 'MISSED'}")
    return all(met for _, met in checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="first-token runs per transport")
    parser.add_argument("--deltas", type=int, default=20_000, help="throughput run length")
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0, help="deltas/s per stream")
    parser.add_argument("--seconds", type=float, default=10.0, help="stream length")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds to spread starts over")
    parser.add_argument("--rounds", type=int, default=1, help="repeat, alternating the order")
    parser.add_argument("--timeline", action="store_true", help="print scenario 3 per second")
    parser.add_argument("--only", choices=TRANSPORTS, help="one transport (e.g. to profile it)")
    parser.add_argument("--throttle", default="100000/min", help="the server's API_THROTTLE_RATE")
    parser.add_argument("--database-url", default="", help="a scratch database (default: SQLite)")
    parser.add_argument("--profile", metavar="FILE", help="write a sampled server profile")
    parser.add_argument(
        "--start-trace", metavar="FILE", help="time each run start's steps in the app server"
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="then scenario 3 over SSE against the durable floor (bench/sse_floor.py): ratios",
    )
    args = parser.parse_args()
    transports = [args.only] if args.only else list(TRANSPORTS)
    per_round = len(transports) * (args.runs + (1 if args.deltas else 0) + args.conversations)

    with tempfile.TemporaryDirectory(prefix="sse-") as workdir:
        password = secrets.token_urlsafe(16)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": args.database_url or f"sqlite:///{workdir}/sse.sqlite3",
            "REDIS_URL": "",
            "LOG_LEVEL": "WARNING",
            "API_THROTTLE_RATE": args.throttle,
            # The benchmark's one user runs every stream at once (0: no per-user cap).
            "ORKESTREL_MAX_RUNS_PER_USER": "0",
            "RELAY_USER": f"sse-{secrets.token_hex(4)}",
            "RELAY_PASSWORD": password,
            "RELAY_CONVERSATIONS": str(
                len(transports)
                + per_round * args.rounds
                + ((1 + args.conversations * args.rounds) if args.durable else 0)
            ),
            "RELAY_SAMPLE": str(Path(args.profile).resolve()) if args.profile else "",
            "RELAY_START_TRACE": str(Path(args.start_trace).resolve()) if args.start_trace else "",
            "RELAY_CHECKPOINT_SECONDS": "",
        }
        relay.manage(env, "migrate", "--noinput")
        lines = relay.manage(env, "shell", "-c", SETUP).splitlines()
        setup = json.loads(next(x for x in lines if x[:6] == "RELAY ")[6:])
        key = next(x for x in lines if x[:7] == "SSEKEY ")[7:]
        server = relay.start_server(env, Path(workdir))
        try:
            database = args.database_url.split("@")[-1] if args.database_url else "SQLite file"
            print(
                f"daphne on 127.0.0.1:{server.port}, {database}, in-memory channel layer, "
                f"API_THROTTLE_RATE={args.throttle}; {os.cpu_count()} cores, load average "
                f"{os.getloadavg()[0]:.2f} before start\n"
            )
            cookie = relay.login(server.port, env["RELAY_USER"], password)
            bench = Bench(args, server, cookie, key, setup["ids"])
            ok = asyncio.run(scenarios(bench, transports))
        finally:
            server.stop()
        if args.durable and args.conversations and "sse" in transports:
            ok = against_durable(args, env, Path(workdir), bench) and ok
            log = server.log.read_text()
            if "Error" in log:
                kept = Path(tempfile.gettempdir()) / "sse-server.log"
                kept.write_text(log)
                print(f"\nthe server logged errors: see {kept}")
        if args.profile:
            print(f"\nserver profile written to {args.profile}")
        if args.start_trace and Path(args.start_trace).exists():
            print(f"\n{summarise(args.start_trace)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
