"""The Django conversation store at 10,000 messages, on a SQLite file database.

Builds a real kit conversation of 10,000 messages (user/assistant exchanges with a tool round
trip every tenth exchange), compacted into sections along the way, saves it through
``DjangoConversationStore`` into a fresh SQLite file, then times: ``get`` (median of several
reads; target under 200 ms), saving one more two-message turn (median of several turns, with
its query count), and saving a compaction. Prints the figures.

Usage: ``.venv/bin/python bench/stores.py [--messages N] [--sections N] [--runs N]``; pass
``--database-url`` to aim at another (scratch!) database, which gets migrated.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Callable, Sequence

from scratch_db import open_scratch_database

GET_TARGET = 0.200  # seconds


async def summarize(messages: Sequence) -> str:
    # Cheap and deterministic: the benchmark measures the store, not a model.
    return f"{len(messages)} messages, from {messages[0].content[:40]!r}"


def build(total: int, sections: int):
    """A conversation of ``total`` messages, ``sections`` compactions deep."""
    from orkestrel.core import create_conversation

    conversation = create_conversation(id=str(uuid.uuid4()), summarize=summarize, keep=20)
    every = max(2, total // (sections + 1))
    added = 0
    exchange = 0
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 3
    while added < total:
        if exchange % 10 == 9 and total - added >= 4:
            call = {"id": f"call-{exchange}", "name": "lookup", "arguments": {"q": exchange}}
            conversation.add(
                [
                    {"role": "user", "content": f"look up {exchange}"},
                    {"role": "assistant", "content": "", "calls": [call]},
                    {"role": "tool", "content": f"result {exchange}", "tool_call_id": call["id"]},
                    {"role": "assistant", "content": f"found {exchange}. {filler}"},
                ]
            )
            added += 4
        else:
            conversation.add(
                [
                    {"role": "user", "content": f"question {exchange}: {filler}"},
                    {"role": "assistant", "content": f"answer {exchange}: {filler}"},
                ][: total - added]
            )
            added += min(2, total - added)
        exchange += 1
        if added // every > len(conversation.sections) and len(conversation.sections) < sections:
            asyncio.run(conversation.compact())
    return conversation


def timed(action: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--sections", type=int, default=9)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()

    scratch, url = open_scratch_database(args.database_url)
    from asgiref.sync import async_to_sync
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from conversations.stores import DjangoConversationStore

    owner, _ = get_user_model().objects.get_or_create(username="bench")
    store = DjangoConversationStore(owner=owner)

    start = time.perf_counter()
    conversation = build(args.messages, args.sections)
    built = time.perf_counter() - start
    snapshot = conversation.snapshot()
    originals = sum(len(section["messages"]) for section in snapshot["sections"])
    print(f"database      {connection.vendor} ({url})")
    print(
        f"conversation  {originals + len(snapshot['messages'])} messages: "
        f"{len(snapshot['sections'])} sections holding {originals}, "
        f"{len(snapshot['messages'])} live (built in {built:.2f} s)"
    )
    first = timed(lambda: store.set_sync(snapshot), 1)[0]
    print(f"first save    {ms(first)}   (every row inserted)")

    assert store.get_sync(conversation.id) == snapshot, "the store did not round-trip"
    reads = timed(lambda: store.get_sync(conversation.id), args.runs)
    read = statistics.median(reads)
    verdict = "ok" if read < GET_TARGET else "OVER TARGET"
    print(
        f"get           {ms(read)}   median of {args.runs} (min {ms(min(reads)).strip()}), "
        f"target < {GET_TARGET * 1000:.0f} ms: {verdict}"
    )
    reads = timed(lambda: async_to_sync(store.get)(conversation.id), args.runs)
    print(f"await get     {ms(statistics.median(reads))}   median, through sync_to_async")

    turns: list[float] = []
    snapshots: list[float] = []
    queries = 0
    for turn in range(args.runs):
        conversation.add(
            [
                {"role": "user", "content": f"one more question {turn}"},
                {"role": "assistant", "content": f"one more answer {turn}"},
            ]
        )
        begin = time.perf_counter()
        snapshot = conversation.snapshot()
        snapshots.append(time.perf_counter() - begin)
        with CaptureQueriesContext(connection) as captured:
            begin = time.perf_counter()
            store.set_sync(snapshot)
            turns.append(time.perf_counter() - begin)
        queries = len(captured)
    turn = statistics.median(turns)
    print(f"save a turn   {ms(turn)}   median of {args.runs}, {queries} queries")
    print(f"  snapshot()  {ms(statistics.median(snapshots))}   (the kit building what is saved)")

    asyncio.run(conversation.compact())
    snapshot = conversation.snapshot()
    with CaptureQueriesContext(connection) as captured:
        begin = time.perf_counter()
        store.set_sync(snapshot)
        fold = time.perf_counter() - begin
    print(f"save compact  {ms(fold)}   one fold into a new section, {len(captured)} queries")
    assert store.get_sync(conversation.id) == snapshot, "the store did not round-trip"
    scratch.cleanup()
    return 0 if read < GET_TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
