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

Run: ``.venv/bin/python bench/relay.py [--conversations 200] [--redis] [--profile FILE]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TARGET_P99 = 0.050
CONNECTING = 20  # handshakes in flight at once: a connect storm is not what is measured
# Run in ``manage.py shell -c``: the demo profile, one user, conversations via the service.
SETUP = """
import json, os
from django.contrib.auth import get_user_model
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.runs import TICK_SECONDS
from conversations.services import create_conversation
ensure_demo_profile()
user = get_user_model().objects.create_user("relay", password=os.environ["RELAY_PASSWORD"])
ids = [str(create_conversation(user=user, title=f"relay {i}").id)
       for i in range(int(os.environ["RELAY_CONVERSATIONS"]))]
print("RELAY " + json.dumps({"ids": ids, "tick": TICK_SECONDS}))
"""


def parse_delta(text: str) -> tuple[int, float, float]:
    """``(index, stamp, lag)`` of one delta (the format of ``bench/relay_app.py``)."""
    index, stamp, lag = text.split(":")
    return int(index), int(stamp) / 1e6, int(lag) / 1e6


# -- the server -------------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def cpu(self) -> float:
        """User + system CPU seconds the server process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.process.poll() is None:
            # SIGINT stops Twisted's reactor cleanly, so a profiled server writes its stats.
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


def start_server(env: dict[str, str], workdir: Path, profile: str | None) -> Server:
    port = free_port()
    command = [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "-v", "0"]
    if profile:
        command = [sys.executable, "-m", "cProfile", "-o", profile, *command]
    log = workdir / "server.log"
    process = subprocess.Popen(
        [*command, "bench.relay_app:application"],
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


def login(port: int, password: str) -> str:
    """The session cookie of the benchmark user, through the real login form."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        page = http.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None, "no CSRF token on the login page"
        answer = http.post(
            "/accounts/login/",
            data={"username": "relay", "password": password, "csrfmiddlewaretoken": token[1]},
        )
        assert answer.status_code == 302, f"login failed: {answer.status_code}"
        return f"sessionid={http.cookies['sessionid']}"


# -- the clients ------------------------------------------------------------------------------


@dataclass
class Client:
    conversation_id: str
    nonce: str = field(default_factory=lambda: secrets.token_hex(6))
    frames: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    run: int | None = None
    protocol: Protocol | None = None
    ready: asyncio.Future[None] = field(default_factory=lambda: _future())
    done: asyncio.Future[None] = field(default_factory=lambda: _future())
    closed: asyncio.Future[None] = field(default_factory=lambda: _future())

    def received(self, at: float, payload: bytes) -> None:
        frame = json.loads(payload)
        kind = frame.get("type")
        if kind == "state":
            _settle(self.ready)
            return
        if kind == "started" and frame.get("nonce") == self.nonce:
            self.run = frame["run"]
        if frame.get("run") is not None and frame.get("run") == self.run:
            self.frames.append((at, frame))
            if kind in ("finish", "error"):
                _settle(self.done)
        elif kind == "error":
            self.frames.append((at, frame))
            _settle(self.done)

    def send(self, content: str) -> None:
        assert self.protocol is not None
        frame = {"type": "send", "content": content, "nonce": self.nonce}
        self.protocol.sendMessage(json.dumps(frame).encode())


def _future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Protocol(WebSocketClientProtocol):
    def onOpen(self) -> None:  # Autobahn's callback names
        self.factory.client.protocol = self

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        # The clock is read first: parsing is client cost, not relay latency.
        self.factory.client.received(time.monotonic(), payload)

    def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:
        client = self.factory.client
        if not client.ready.done():
            client.ready.set_exception(ConnectionError(f"socket closed: {code} {reason}"))
        _settle(client.done)
        _settle(client.closed)


async def connect(port: int, cookie: str, conversation_id: str) -> Client:
    client = Client(conversation_id)
    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    factory = WebSocketClientFactory(
        url, origin=f"http://127.0.0.1:{port}", headers={"Cookie": cookie}
    )
    factory.protocol = Protocol
    factory.client = client
    factory.setProtocolOptions(
        utf8validateIncoming=False,
        tcpNoDelay=True,
        openHandshakeTimeout=60,
        closeHandshakeTimeout=60,
    )
    await asyncio.get_running_loop().create_connection(factory, "127.0.0.1", port)
    await asyncio.wait_for(client.ready, 30)
    return client


async def close(clients: list[Client]) -> None:
    for client in clients:
        if client.protocol is not None and client.protocol.state == client.protocol.STATE_OPEN:
            client.protocol.sendClose()
    await asyncio.wait_for(asyncio.gather(*(c.closed for c in clients)), 60)


# -- the figures ------------------------------------------------------------------------------


@dataclass
class Figures:
    latencies: list[float] = field(default_factory=list)  # per delta: receive - stamp
    beyond: list[float] = field(default_factory=list)  # per frame: receive - (first + tick)
    lags: list[float] = field(default_factory=list)  # per delta: stamp - due (provider)
    frames: int = 0  # token frames
    deltas: int = 0
    lost_frames: int = 0
    lost_deltas: int = 0
    broken: int = 0  # runs whose text differs from what the server assembled
    unfinished: int = 0
    first_stamp: float = float("inf")
    last_stamp: float = 0.0
    last_receive: float = 0.0

    def add(self, client: Client, count: int, tick: float) -> None:
        frames = client.frames
        finish = next((f for _, f in frames if f.get("type") == "finish"), None)
        if finish is None:
            self.unfinished += 1
        seqs = [f["seq"] for _, f in frames if f.get("seq") is not None]
        top = max(seqs, default=0)
        # Missing numbers, duplicates and reordering all count: each breaks the client's view.
        self.lost_frames += top - len(set(seqs)) + len(seqs) - len(set(seqs))
        self.lost_frames += seqs != sorted(seqs)
        indices: list[int] = []
        text: list[str] = []
        for at, frame in frames:
            if frame.get("type") != "token":
                continue
            self.frames += 1
            text.append(frame["content"])
            stamps = []
            for part in frame["content"].split(" ")[:-1]:
                index, stamp, lag = parse_delta(part)
                indices.append(index)
                stamps.append(stamp)
                self.latencies.append(at - stamp)
                self.lags.append(lag)
            self.beyond.append(at - (stamps[0] + tick))
            self.first_stamp = min(self.first_stamp, stamps[0])
            self.last_stamp = max(self.last_stamp, stamps[-1])
            self.last_receive = max(self.last_receive, at)
        self.deltas += len(indices)
        self.lost_deltas += count - len(set(indices) & set(range(count)))
        expected = finish["result"]["content"] if finish is not None else None
        if indices != list(range(count)) or "".join(text) != expected:
            self.broken += 1


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:6.1f} ms"


def spread(values: list[float]) -> str:
    return f"p50 {ms(pct(values, 0.5))}   p99 {ms(pct(values, 0.99))}   max {ms(max(values))}"


# -- the scenarios ----------------------------------------------------------------------------


async def stream(
    port: int, cookie: str, ids: list[str], count: int, interval: float, ramp: float
) -> tuple[list[Client], float]:
    """Open one socket per conversation, start every run (spread over ``ramp``), drain them."""
    gate = asyncio.Semaphore(CONNECTING)

    async def opened(conversation_id: str) -> Client:
        async with gate:
            return await connect(port, cookie, conversation_id)

    begun = time.monotonic()
    clients = await asyncio.gather(*(opened(cid) for cid in ids))
    start = time.monotonic()
    if len(clients) > 1:
        print(f"   {len(clients)} sockets open and their state received in {start - begun:.1f} s")
    for index, client in enumerate(clients):
        delay = start + index * ramp / len(clients) - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        client.send(f"relay {count} {interval}")
    limit = ramp + count * interval + 120
    await asyncio.wait_for(asyncio.gather(*(c.done for c in clients)), limit)
    elapsed = time.monotonic() - start
    await close(clients)
    return clients, elapsed


async def scenarios(args: argparse.Namespace, server: Server, cookie: str, setup: dict) -> bool:
    ids, tick, port = setup["ids"], setup["tick"], server.port
    await stream(port, cookie, ids[:1], 200, 0, 0)  # warm-up: imports, first queries
    print(f"tick (TICK_SECONDS)  {ms(tick)}   coalescing adds up to one tick by design\n")

    clients, _ = await stream(port, cookie, ids[1:2], args.deltas, 0, 0)
    one = Figures()
    one.add(clients[0], args.deltas, tick)
    span = one.last_receive - one.first_stamp
    produced = one.last_stamp - one.first_stamp
    print(f"1. throughput: one connection, {args.deltas:,} deltas, no delay")
    print(f"   delivered          {one.deltas / span:9,.0f} deltas/s  (first stamp → last frame)")
    print(
        f"   frames             {one.frames / span:9,.0f} frames/s  ({one.frames:,} token frames,"
    )
    print(f"                                          {one.deltas / one.frames:.1f} deltas each)")
    print(f"   provider           {args.deltas / produced:9,.0f} deltas/s  (first → last stamp)")
    print(f"   added latency      {spread(one.latencies)}")
    print(f"   lost               {one.lost_frames} frames, {one.lost_deltas} deltas\n")

    count = round(args.rate * args.seconds)
    interval = 1 / args.rate
    runs = ids[2 : 2 + args.conversations]
    cpu_server, cpu_client = server.cpu(), time.process_time()
    clients, elapsed = await stream(port, cookie, runs, count, interval, args.ramp)
    cpu_server, cpu_client = server.cpu() - cpu_server, time.process_time() - cpu_client
    many = Figures()
    for client in clients:
        many.add(client, count, tick)
    print(
        f"2. concurrency: {len(runs)} conversations x {count} deltas at {args.rate:g}/s "
        f"(starts spread over {args.ramp:g} s)"
    )
    print(f"   added latency      {spread(many.latencies)}   (delta stamp → client)")
    print(f"   beyond the tick    {spread(many.beyond)}   (frame - first delta - tick)")
    print(f"   provider lag       {spread(many.lags)}   (server loop lateness, not above)")
    print(
        f"   frames             {many.frames:,} token frames, "
        f"{many.deltas / many.frames:.2f} deltas each"
    )
    print(
        f"   lost               {many.lost_frames} frames (seq gaps), {many.lost_deltas} deltas, "
        f"{many.broken} runs with wrong text, {many.unfinished} unfinished"
    )
    print(
        f"   CPU                server {cpu_server / elapsed:4.0%} of a core, "
        f"clients {cpu_client / elapsed:4.0%} ({elapsed:.1f} s wall)"
    )
    p99 = pct(many.latencies, 0.99)
    lost = many.lost_frames + many.lost_deltas + many.broken + many.unfinished
    lost += one.lost_frames + one.lost_deltas + one.broken + one.unfinished
    ok = lost == 0 and p99 < TARGET_P99
    print(
        f"\ntarget: nothing lost, p99 added < {ms(TARGET_P99).strip()}: {'met' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000, help="throughput run length")
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0, help="deltas/s per conversation")
    parser.add_argument("--seconds", type=float, default=10.0, help="stream length")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds to spread starts over")
    parser.add_argument("--redis", action="store_true", help="use the Redis channel layer")
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="relay-") as workdir:
        password = secrets.token_urlsafe(16)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": f"sqlite:///{workdir}/relay.sqlite3",
            "REDIS_URL": "redis://127.0.0.1:6379/13" if args.redis else "",
            "LOG_LEVEL": "WARNING",
            "RELAY_PASSWORD": password,
            "RELAY_CONVERSATIONS": str(2 + args.conversations),
        }
        manage(env, "migrate", "--noinput")
        line = next(x for x in manage(env, "shell", "-c", SETUP).splitlines() if x[:6] == "RELAY ")
        setup = json.loads(line[6:])
        server = start_server(env, Path(workdir), args.profile)
        try:
            layer = "Redis channel layer" if args.redis else "in-memory channel layer"
            print(f"daphne on 127.0.0.1:{server.port}, SQLite file, {layer}\n")
            ok = asyncio.run(scenarios(args, server, login(server.port, password), setup))
        finally:
            server.stop()
            problems = [x for x in server.log.read_text().splitlines() if "Error" in x]
            if problems:
                print(f"\nserver log: {len(problems)} error lines, e.g. {problems[0]}")
        if args.profile:
            import pstats

            print(f"\nserver profile ({args.profile}), top 25 by own time:")
            pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
