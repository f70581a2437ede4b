"""The MCP server at ``/mcp``: the time a call adds over the REST API's waited message.

Orkestrel runs as ``daphne orkestrel.asgi:application`` (``bench/relay.py``'s launcher) on a
fresh SQLite file with the offline demo profile answering at once (no word delay), one user
and an API key. Each measured call is the same run: one message ("hello") in a fresh, empty
conversation of the demo profile (made through the API beforehand, not timed), answered
when the run has settled:

- **rest**: ``POST /api/conversations/{id}/messages/?wait=true`` (httpx, kept-alive);
- **mcp**: ``tools/call demo {"message": "hello", "conversation": id}`` through the official
  SDK's client (``mcp.Client``), on the 2026-07-28 revision (one self-contained POST) and
  on the previous one (a session opened once, ``--legacy``).

1. One at a time: ``--calls`` calls per path, the paths alternating.
2. Concurrency: ``--concurrent`` calls at once per path (each its own conversation), one
   path after the other; the time of each call.

Prints p50 and p99 per path and "added" (mcp minus rest). The processes share the machine.

Run: ``.venv/bin/python bench/mcp_server.py [--calls 200] [--concurrent 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import httpx2
import relay
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from relay_clients import ms, pct

SETUP = """
import os
from django.contrib.auth import get_user_model
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import ApiKey
ensure_demo_profile()
user = get_user_model().objects.create_user(os.environ["BENCH_USER"])
_, raw = ApiKey.objects.issue(user=user, name="mcp benchmark")
print("BENCHKEY " + raw)
"""
MESSAGE = "hello"

Call = Callable[[str], Awaitable[None]]


async def fresh(api: httpx.AsyncClient, count: int) -> list[str]:
    """``count`` empty conversations of the demo profile."""
    made = []
    for _ in range(count):
        response = await api.post("/api/conversations/", json={"profile": "demo"})
        response.raise_for_status()
        made.append(response.json()["id"])
    return made


def rest_call(api: httpx.AsyncClient) -> Call:
    async def call(conversation: str) -> None:
        response = await api.post(
            f"/api/conversations/{conversation}/messages/?wait=true", json={"content": MESSAGE}
        )
        response.raise_for_status()
        assert response.json()["status"] == "done", response.text

    return call


def mcp_call(client: Client) -> Call:
    async def call(conversation: str) -> None:
        result = await client.call_tool("demo", {"message": MESSAGE, "conversation": conversation})
        assert not result.is_error, result.content

    return call


async def timed(call: Call, conversation: str) -> float:
    start = time.perf_counter()
    await call(conversation)
    return time.perf_counter() - start


def line(name: str, times: list[float]) -> str:
    return (
        f"  {name:<6} p50 {ms(pct(times, 0.5))}  p99 {ms(pct(times, 0.99))}  "
        f"mean {ms(statistics.fmean(times))}  n={len(times)}"
    )


def added(name: str, mine: list[float], base: list[float]) -> str:
    return (
        f"  added ({name}): p50 {ms(pct(mine, 0.5) - pct(base, 0.5))}, "
        f"p99 {ms(pct(mine, 0.99) - pct(base, 0.99))}"
    )


async def scenarios(url: str, key: str, calls: int, concurrent: int, legacy: bool) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=concurrent + 4, max_keepalive_connections=concurrent + 4)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120, limits=limits) as api:
        mcp_http = httpx2.AsyncClient(headers=headers, timeout=120)
        mode = "legacy" if legacy else "auto"
        async with Client(
            streamable_http_client(f"{url}/mcp", http_client=mcp_http), mode=mode
        ) as client:
            paths: dict[str, Call] = {"rest": rest_call(api), "mcp": mcp_call(client)}
            print(f"mcp client on protocol {client.protocol_version}\n")
            # Warm up both paths (the first run builds the profile's configuration).
            for call in paths.values():
                for conversation in await fresh(api, 5):
                    await call(conversation)
            one: dict[str, list[float]] = {name: [] for name in paths}
            for conversation_pair in [await fresh(api, 2) for _ in range(calls)]:
                for name, conversation in zip(paths, conversation_pair, strict=True):
                    one[name].append(await timed(paths[name], conversation))
            print("one call at a time (the paths alternating):")
            for name, times in one.items():
                print(line(name, times))
            print(added("one", one["mcp"], one["rest"]))
            many: dict[str, list[float]] = {}
            for name, call in paths.items():
                conversations = await fresh(api, concurrent)
                await asyncio.sleep(0.5)
                many[name] = list(await asyncio.gather(*(timed(call, c) for c in conversations)))
            print(f"\n{concurrent} calls at once (per call):")
            for name, times in many.items():
                print(line(name, times))
            print(added(f"{concurrent} at once", many["mcp"], many["rest"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per path, one at a time")
    parser.add_argument("--concurrent", type=int, default=20, help="calls at once per path")
    parser.add_argument(
        "--legacy", action="store_true", help="the MCP client speaks the previous revision"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-server-") as workdir:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": f"sqlite:///{workdir}/mcp.sqlite3",
            "REDIS_URL": "",
            "LOG_LEVEL": "WARNING",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "API_THROTTLE_RATE": "1000000/min",
            "ORKESTREL_MAX_RUNS_PER_USER": "0",
            "ORKESTREL_DEMO_WORD_DELAY": "0",
            "BENCH_USER": f"mcp-{secrets.token_hex(4)}",
        }
        relay.manage(env, "migrate", "--noinput")
        lines = relay.manage(env, "shell", "-c", SETUP).splitlines()
        key = next(x for x in lines if x.startswith("BENCHKEY "))[9:]
        server = relay.start_server(env, Path(workdir), app="orkestrel.asgi:application")
        try:
            print(
                f"daphne on 127.0.0.1:{server.port} (SQLite file, in-memory layer); "
                f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} before start"
            )
            asyncio.run(
                scenarios(
                    f"http://127.0.0.1:{server.port}", key, args.calls, args.concurrent, args.legacy
                )
            )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
