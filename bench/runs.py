"""A run's database side: what starting and settling one costs the server's database thread.

On a fresh SQLite file (migrated here) with the demo profile, times over ``--runs`` fresh
conversations:

- ``prepare_run``: load the session's rows, store the user message, open the ``Run`` row (the
  one database hop of a start), with its statement count;
- ``ChatSession.from_loaded``: building the live agent from those rows (event loop time);
- settling: ``ChatSession.commit`` of a finished ~10 KB answer with the ``Run`` row and the
  ``committed`` payload in the same hop (markdown renders in the child process).

Every millisecond of the first and last is Django ORM work on the thread that shares the GIL
with the event loop, so it shows in the live streams' latency (``bench/relay.py``).

Usage: ``.venv/bin/python bench/runs.py [--runs N] [--database-url URL]`` (a scratch database).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from scratch_db import open_scratch_database


def ms(seconds: float) -> str:
    return f"{seconds * 1000:6.2f} ms"


def spread(values: list[float]) -> str:
    return f"median {ms(statistics.median(values))}  min {ms(min(values))}"


class Clock:
    """Wall time and this process's CPU time (every thread; not the rendering child)."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


async def measure(runs: int) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents.management.commands.bootstrap import ensure_demo_profile
    from agents.runs.payloads import committed_payload
    from agents.runs.records import RunLimits, finish_run, prepare_run
    from agents.runtime.session import ChatSession
    from conversations.services import create_conversation
    from orkestrel.core import AgentResult, Message, TokenUsage, mint_id

    def setup() -> tuple[int, list[str]]:
        ensure_demo_profile()
        user, _ = get_user_model().objects.get_or_create(username="bench")
        ids = [str(create_conversation(user=user, title=f"c{i}").id) for i in range(runs + 5)]
        return user.id, ids

    user_id, ids = await sync_to_async(setup)()
    # As a server starts runs: the run slot, the per-user cap (counted) and the stale check.
    limits = RunLimits(per_user=20, stale=10.0)
    answer = " ".join(f"word{i} **bold** `code`" for i in range(500))  # ~10 KB of markdown
    figures: dict[str, list[float]] = {name: [] for name in ("start", "build", "settle")}
    cpu: dict[str, list[float]] = {"start": [], "settle": []}
    for index, conversation_id in enumerate(ids):
        message = Message(mint_id(), "user", "hello")
        with Clock() as start:
            loaded, run_id, *_ = await sync_to_async(prepare_run)(
                conversation_id, user_id, message, "bench", limits
            )
        with Clock() as build:
            session = await ChatSession.from_loaded(loaded)
        session.run_id = run_id
        session.agent.context.messages.add(Message(mint_id(), "assistant", answer))
        fresh = session.agent.context.messages.messages()[-1:]
        result = AgentResult(answer, usage=TokenUsage(1, 500, 501))
        with Clock() as settle:
            await session.commit(
                result.usage,
                lambda run_id=run_id, result=result: finish_run(run_id, "done", result, ""),
                lambda fresh=fresh: committed_payload(fresh),
            )
        if index >= 5:  # the first few warm caches, connections and the rendering process
            figures["start"].append(start.wall)
            figures["build"].append(build.wall)
            figures["settle"].append(settle.wall)
            cpu["start"].append(start.cpu)
            cpu["settle"].append(settle.cpu)

    def counted() -> int:
        with CaptureQueriesContext(connection) as queries:
            prepare_run(ids[-1], user_id, Message(mint_id(), "user", "again"), "bench", limits)
        return len(queries)

    statements = await sync_to_async(counted)()
    print(f"database      {connection.vendor}, {runs} runs on fresh conversations")
    print(f"start         {spread(figures['start'])}   {statements} statements")
    print(f"              CPU {spread(cpu['start'])}   (the database thread's share)")
    print(f"agent build   {spread(figures['build'])}   (event loop)")
    print(f"settle        {spread(figures['settle'])}   (10 KB answer, Run row, committed)")
    print(f"              CPU {spread(cpu['settle'])}   (markdown renders in the child)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()

    scratch, _ = open_scratch_database(args.database_url)
    asyncio.run(measure(args.runs))
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
