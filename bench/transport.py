"""Client CPU per streamed event at a model's pace: httpx's own transport against ours.

``bench/providers.py`` drains one long body, where a read returns many events. A model streams
at its own pace, so each read returns one event and the per-read cost of the transport is
what counts. The fake upstream (``bench/openai_upstream.py``, its own process) streams
``--streams`` answers at once, ``--tokens`` deltas each, ``--interval`` apart; this process
reads them through one ``httpx.AsyncClient`` per transport, alternating, and divides its
``time.process_time()`` by the reads.

Run: ``.venv/bin/python bench/transport.py [--streams 100] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orkestrel.providers.transport import streaming_transport

UPSTREAM = Path(__file__).resolve().parent / "openai_upstream.py"
TRANSPORTS = ("httpx", "streaming")


async def _stream(client: httpx.AsyncClient, url: str, tokens: int, interval: float) -> int:
    body = {
        "model": "bench",
        "stream": True,
        "messages": [{"role": "user", "content": f"stream {tokens} {interval}"}],
    }
    reads = 0
    async with client.stream("POST", url, json=body) as response:
        async for _ in response.aiter_raw():
            reads += 1
    return reads


async def _measure(kind: str, url: str, args: argparse.Namespace) -> None:
    transport = (
        streaming_transport(secure=False)
        if kind == "streaming"
        else httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=None))
    )
    async with httpx.AsyncClient(transport=transport, timeout=60) as client:
        await _stream(client, url, 5, 0.001)  # warm-up: imports, a first connection
        cpu, wall = time.process_time(), time.monotonic()
        counts = await asyncio.gather(
            *(_stream(client, url, args.tokens, args.interval) for _ in range(args.streams))
        )
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    reads = sum(counts)
    print(
        f"{kind:10} {args.streams} streams, {reads:6d} reads: "
        f"{cpu / reads * 1e6:6.1f} µs of CPU per read, {cpu / wall:4.0%} of a core"
    )


async def _rounds(url: str, args: argparse.Namespace) -> None:
    for _ in range(args.rounds):
        for kind in TRANSPORTS:
            await _measure(kind, url, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=100, help="deltas per stream")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    upstream = subprocess.Popen(
        [sys.executable, str(UPSTREAM), "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert upstream.stdout is not None
        port = int(upstream.stdout.readline().split()[1])
        asyncio.run(_rounds(f"http://127.0.0.1:{port}/v1/chat/completions", args))
    finally:
        upstream.kill()


if __name__ == "__main__":
    main()
