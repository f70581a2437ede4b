"""The relay benchmark's websocket clients and the figures drawn from what they received.

Clients are Autobahn's asyncio websocket client (installed with Daphne): a real RFC 6455
client over loopback. Each records ``time.monotonic()`` the moment a frame arrives, before
parsing it; ``bench/relay_app.py`` stamps every delta with the same system-wide clock.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

__all__ = ["Client", "Figures", "close", "connect", "ms", "parse_delta", "pct", "spread"]


def parse_delta(text: str) -> tuple[int, float, float]:
    """``(index, stamp, lag)`` of one delta (the format of ``bench/relay_app.py``)."""
    index, stamp, lag = text.split(":")
    return int(index), int(stamp) / 1e6, int(lag) / 1e6


# -- the clients ------------------------------------------------------------------------------


@dataclass
class Client:
    conversation_id: str
    nonce: str = field(default_factory=lambda: secrets.token_hex(6))
    sent: float = 0.0
    frames: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    run: int | None = None
    protocol: Protocol | None = None
    dropped: int | None = None  # the close code, when the server closed the socket first
    closing: bool = False
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
        self.sent = time.monotonic()
        if self.dropped is None:
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
        if not client.closing:
            client.dropped = code or 1006
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
        client.closing = True
        if client.protocol is not None and client.protocol.state == client.protocol.STATE_OPEN:
            client.protocol.sendClose()
    await asyncio.wait_for(asyncio.gather(*(c.closed for c in clients)), 60)


# -- the figures ------------------------------------------------------------------------------


@dataclass
class Figures:
    stamps: list[float] = field(default_factory=list)  # per delta: the provider's stamp
    latencies: list[float] = field(default_factory=list)  # per delta: receive - stamp
    lags: list[float] = field(default_factory=list)  # per delta: stamp - due (provider)
    starts: list[float] = field(default_factory=list)  # per run: send -> ``started`` frame
    firsts: list[float] = field(default_factory=list)  # per run: first delta stamp
    lasts: list[float] = field(default_factory=list)  # per run: last delta stamp
    frames: int = 0  # token frames
    deltas: int = 0
    lost_frames: int = 0
    lost_deltas: int = 0
    broken: int = 0  # runs whose text differs from what the server assembled
    unfinished: int = 0
    dropped: int = 0  # sockets the server closed mid-run
    last_receive: float = 0.0

    def add(self, client: Client, count: int) -> None:
        frames = client.frames
        finish = next((f for _, f in frames if f.get("type") == "finish"), None)
        if finish is None:
            self.unfinished += 1
        self.dropped += client.dropped is not None
        self.starts += [at - client.sent for at, f in frames if f.get("type") == "started"]
        seqs = [f["seq"] for _, f in frames if f.get("seq") is not None]
        top = max(seqs, default=0)
        # Missing numbers, duplicates and reordering all count: each breaks the client's view.
        self.lost_frames += top - len(set(seqs)) + len(seqs) - len(set(seqs))
        self.lost_frames += seqs != sorted(seqs)
        indices: list[int] = []
        text: list[str] = []
        # A long burst is cut into frames under the socket's limit, maybe inside a delta: a
        # delta arrives with the frame that holds its end.
        carry = ""
        for at, frame in frames:
            if frame.get("type") != "token":
                continue
            self.frames += 1
            text.append(frame["content"])
            stamps = []
            *parts, carry = (carry + frame["content"]).split(" ")
            for part in parts:
                index, stamp, lag = parse_delta(part)
                indices.append(index)
                stamps.append(stamp)
                self.latencies.append(at - stamp)
                self.lags.append(lag)
            self.stamps += stamps
            self.last_receive = max(self.last_receive, at)
        if indices:
            self.firsts.append(self.stamps[-len(indices)])
            self.lasts.append(self.stamps[-1])
        self.deltas += len(indices)
        self.lost_deltas += count - len(set(indices) & set(range(count)))
        expected = finish["result"]["content"] if finish is not None else None
        if indices != list(range(count)) or "".join(text) != expected:
            self.broken += 1

    @property
    def lost(self) -> int:
        return self.lost_frames + self.lost_deltas + self.broken + self.unfinished + self.dropped

    def steady(self) -> tuple[float, list[float]]:
        """The window in which every run was streaming, and the latencies of its deltas."""
        if not self.firsts:
            return 0.0, []
        low, high = max(self.firsts), min(self.lasts)
        return high - low, self.between(low, high)

    def phases(self) -> list[tuple[str, float, list[float]]]:
        """Latencies while runs were starting, while all streamed, while runs were finishing."""
        if not self.firsts:
            return []
        began, ended = (min(self.firsts), max(self.firsts)), (min(self.lasts), max(self.lasts))
        steady = (began[1], ended[0])
        return [
            (name, high - low, self.between(low, high))
            for name, (low, high) in (
                ("runs starting", began),
                ("all streaming", steady),
                ("runs finishing", ended),
            )
        ]

    def between(self, low: float, high: float) -> list[float]:
        """Latencies of the deltas stamped in ``[low, high]``."""
        return [v for s, v in zip(self.stamps, self.latencies, strict=True) if low <= s <= high]

    def timeline(self, origin: float) -> None:
        """Per second since the first send: runs that began, deltas, latency, provider lag."""
        rows: dict[int, list[list[float]]] = {}
        for stamp, latency, lag in zip(self.stamps, self.latencies, self.lags, strict=True):
            row = rows.setdefault(int(stamp - origin), [[], []])
            row[0].append(latency)
            row[1].append(lag)
        began = [int(first - origin) for first in self.firsts]
        print("   second  runs began  deltas   added p50   added p99   provider lag p99")
        for second in sorted(rows):
            latencies, lags = rows[second]
            print(
                f"   {second:6d}  {began.count(second):10d}  {len(latencies):6d}  "
                f"{ms(pct(latencies, 0.5))}  {ms(pct(latencies, 0.99))}  {ms(pct(lags, 0.99))}"
            )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def spread(values: list[float]) -> str:
    if not values:
        return "(none)"
    return f"p50 {ms(pct(values, 0.5))}  p99 {ms(pct(values, 0.99))}  max {ms(max(values))}"
