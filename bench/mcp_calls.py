"""The added time of an MCP tool call through a run's tool source over the SDK called directly.

One fixture server (``tests/mcp_server.py``: the SDK's ``MCPServer`` over Streamable HTTP, in
its own process). Two shapes, each alone and as 50 concurrent runs:

- *steady*: a call on a connection that is already open (the SDK's ``Client.call_tool``
  against our tool: argument check, guard, the owner task's client, the result payload);
- *first*: a run's first call: the SDK connects, calls and closes; ours opens the source
  (the listing from the warm catalog), calls through the tool (connecting lazily) and closes.

Usage: ``.venv/bin/python bench/mcp_calls.py [rounds]`` (default 200 per shape).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789abcdef")

import django

django.setup()

from mcp import Client  # noqa: E402

from agents.mcp.catalog import catalog  # noqa: E402
from agents.mcp.endpoint import McpEndpoint  # noqa: E402
from agents.runtime.mcp_tools import McpToolSource  # noqa: E402
from tests.mcp_server import McpProcess  # noqa: E402

CONCURRENT = 50


def quantiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {p50 * 1000:7.2f} ms  p99 {p99 * 1000:7.2f} ms"


async def timed(work: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await work()
    return time.perf_counter() - started


async def measure(
    label: str, one: Callable[[], Awaitable[float]], rounds: int
) -> tuple[list[float], list[float]]:
    alone = [await one() for _ in range(rounds)]
    together: list[float] = []
    for _ in range(max(1, rounds // CONCURRENT)):
        together.extend(await asyncio.gather(*(one() for _ in range(CONCURRENT))))
    print(f"{label:34} 1: {quantiles(alone)}   {CONCURRENT}: {quantiles(together)}")
    return alone, together


async def main(rounds: int) -> None:
    log = Path(tempfile.mkdtemp()) / "mcp.log"
    server = McpProcess.start(log)
    endpoint = McpEndpoint(pk=1, name="fixture", url=server.url)
    arguments = {"text": "hello"}
    try:
        # -- steady: one open connection ----------------------------------------------------
        async with Client(server.url) as direct:
            await direct.call_tool("echo", arguments)

            async def sdk_steady() -> float:
                return await timed(lambda: direct.call_tool("echo", arguments))

            base = await measure("SDK call, open connection", sdk_steady, rounds)

        source = McpToolSource(endpoint)
        await source.open()
        (tool,) = [t for t in source.tools() if t.name == "fixture__echo"]
        await tool.run(arguments)

        async def ours_steady() -> float:
            return await timed(lambda: tool.run(arguments))

        ours = await measure("tool source, open connection", ours_steady, rounds)
        await source.close()
        added("steady", base, ours)

        # -- first: connect, call, close ----------------------------------------------------
        async def sdk_first() -> float:
            async def work() -> None:
                async with Client(server.url) as client:
                    await client.call_tool("echo", arguments)

            return await timed(work)

        base = await measure("SDK connect+call+close", sdk_first, rounds)
        catalog.clear()
        warm = McpToolSource(endpoint)
        await warm.open()  # the catalog is warm from here, as for every run but the first
        await warm.close()

        async def ours_first() -> float:
            async def work() -> None:
                run = McpToolSource(endpoint)
                await run.open()
                (echo,) = [t for t in run.tools() if t.name == "fixture__echo"]
                await echo.run(arguments)
                await run.close()

            return await timed(work)

        ours = await measure("source open+call+close", ours_first, rounds)
        added("first call of a run", base, ours)
    finally:
        server.stop()


def added(
    label: str, base: tuple[list[float], list[float]], ours: tuple[list[float], list[float]]
) -> None:
    for shape, b, o in (("1", base[0], ours[0]), (str(CONCURRENT), base[1], ours[1])):
        b50, o50 = statistics.median(b), statistics.median(o)
        b99 = sorted(b)[int(len(b) * 0.99) - 1]
        o99 = sorted(o)[int(len(o) * 0.99) - 1]
        print(
            f"  added ({label}, {shape}): p50 {(o50 - b50) * 1000:+.2f} ms, "
            f"p99 {(o99 - b99) * 1000:+.2f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
