"""``GroupCommit``: work arriving together shares a hop and a transaction, each piece on its own."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction

from orkestrel.db import Lanes, in_thread
from orkestrel.group_commit import GroupCommit

pytestmark = pytest.mark.django_db(transaction=True)

CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")


def _transaction() -> object:
    """Something that names the current transaction (PostgreSQL's id; else whether one is open)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT txid_current()")
            return cursor.fetchone()[0]
    return connection.in_atomic_block


def _create(name: str) -> tuple[str, object, str]:
    Group.objects.create(name=name)
    return name, _transaction(), CALLER.get()


async def _as(caller: str, work: GroupCommit, name: str) -> tuple[str, object, str]:
    CALLER.set(caller)
    return await work.run(_create, name)


def _names() -> set[str]:
    return set(Group.objects.values_list("name", flat=True))


async def test_pieces_arriving_together_commit_in_one_transaction_each_in_its_callers_context():
    work = GroupCommit()
    results = await asyncio.gather(*(_as(f"caller {i}", work, f"group {i}") for i in range(5)))
    assert [name for name, _, _ in results] == [f"group {i}" for i in range(5)]
    # Each piece saw its own caller's context variables, not the batch's.
    assert [caller for _, _, caller in results] == [f"caller {i}" for i in range(5)]
    transactions = {transaction for _, transaction, _ in results}
    assert len(transactions) == 1 and transactions != {False}
    assert await in_thread(_names)() == {f"group {i}" for i in range(5)}


async def test_a_refused_piece_stores_nothing_and_the_others_in_its_batch_are_kept():
    await in_thread(Group.objects.create)(name="taken")
    work = GroupCommit()

    def create_two(first: str, second: str) -> None:
        # Half stored, then refused: the savepoint takes the first row back too.
        Group.objects.create(name=first)
        Group.objects.create(name=second)

    outcomes = await asyncio.gather(
        work.run(_create, "before"),
        work.run(create_two, "half", "taken"),
        work.run(_create, "after"),
        return_exceptions=True,
    )
    assert isinstance(outcomes[1], IntegrityError)
    assert await in_thread(_names)() == {"taken", "before", "after"}


async def test_a_lone_piece_runs_as_written_outside_any_batch_transaction():
    work = GroupCommit()
    name, transaction, _ = await work.run(_create, "alone")
    if connection.vendor != "postgresql":
        assert transaction is False  # autocommit: Django's own statement-level transaction
    assert await in_thread(_names)() == {name}


async def test_work_arriving_while_a_batch_runs_goes_in_the_next_one():
    work = GroupCommit(limit=2)
    first = asyncio.ensure_future(work.run(_create, "one"))
    await asyncio.sleep(0)  # the first batch is on its way (alone)
    rest = [asyncio.ensure_future(work.run(_create, f"later {i}")) for i in range(4)]
    results = await asyncio.gather(first, *rest)
    assert [name for name, _, _ in results] == ["one"] + [f"later {i}" for i in range(4)]
    if connection.vendor == "postgresql":
        # At most ``limit`` pieces a transaction: the four later ones in two batches of two.
        assert len({transaction for _, transaction, _ in results[1:]}) == 2
    assert len(await in_thread(_names)()) == 5


async def test_each_event_loop_batches_its_own_work_at_the_same_time():
    # A server's loop beside a worker's or a sync caller's: neither drops the other's pieces.
    work = GroupCommit()
    mine = asyncio.ensure_future(work.run(_create, "this loop"))

    def in_another_loop() -> str:
        return asyncio.run(work.run(_create, "another loop"))[0]

    assert await asyncio.wait_for(asyncio.to_thread(in_another_loop), 30) == "another loop"
    assert (await asyncio.wait_for(mine, 30))[0] == "this loop"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite has one writer: no lanes")
async def test_with_lanes_a_batch_goes_while_another_is_still_in_flight():
    work = GroupCommit(lanes=Lanes(2))
    entered, release = threading.Event(), threading.Event()

    def held() -> tuple[str, object, str]:
        entered.set()
        release.wait(10)
        return _create("held")

    first = asyncio.ensure_future(work.run(held))
    assert await asyncio.to_thread(entered.wait, 10)  # its batch is on one lane
    assert (await work.run(_create, "beside it"))[0] == "beside it"
    assert not first.done()
    release.set()
    assert (await first)[0] == "held"
    assert await in_thread(_names)() == {"held", "beside it"}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite has one writer: no lanes")
def test_a_sync_callers_piece_runs_on_its_thread_in_its_transaction():
    # A sync view (or a test) that awaits a start through ``async_to_sync``: the start must
    # see what the caller's open transaction wrote, as ``in_thread`` does.
    work = GroupCommit(lanes=Lanes(2))
    with transaction.atomic():
        Group.objects.create(name="uncommitted")
        assert async_to_sync(work.run)(_names) == {"uncommitted"}
