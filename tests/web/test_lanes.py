"""``on_lane``: database work beside the database thread on PostgreSQL, on it on SQLite."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest
from asgiref.sync import SyncToAsync, async_to_sync
from django.contrib.auth.models import Group
from django.db import connection, transaction

from orkestrel.db import Lanes, in_thread, on_lane, shared_lanes

pytestmark = pytest.mark.django_db(transaction=True)
POSTGRES = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite has one writer: no lanes"
)

CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")


def _create(name: str) -> tuple[str, str, str]:
    Group.objects.create(name=name)
    return name, threading.current_thread().name, CALLER.get()


def _names() -> set[str]:
    return set(Group.objects.values_list("name", flat=True))


async def test_work_on_a_lane_runs_in_its_callers_context_and_is_committed():
    CALLER.set("me")
    name, _, caller = await on_lane(_create, "stored")
    assert (name, caller) == ("stored", "me")
    assert await in_thread(_names)() == {"stored"}


@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL has lanes")
async def test_on_sqlite_work_stays_on_the_database_thread():
    assert shared_lanes() is None
    _, thread, _ = await on_lane(_create, "one writer")
    database_thread = SyncToAsync.single_thread_executor._threads  # type: ignore[attr-defined]
    assert thread in {t.name for t in database_thread}


@POSTGRES
async def test_on_postgresql_work_goes_while_other_work_is_still_in_flight():
    lanes = Lanes(2)
    entered, release = threading.Event(), threading.Event()

    def held() -> tuple[str, str, str]:
        entered.set()
        release.wait(10)
        return _create("held")

    first = asyncio.ensure_future(lanes.run(held))
    assert await asyncio.to_thread(entered.wait, 10)  # it holds one lane
    assert (await lanes.run(_create, "beside it"))[0] == "beside it"
    assert not first.done()
    release.set()
    assert (await first)[0] == "held"
    assert await in_thread(_names)() == {"held", "beside it"}


@POSTGRES
def test_a_sync_callers_work_runs_on_its_thread_in_its_transaction():
    # A sync view (or a test) that awaits a start through ``async_to_sync``: the start must
    # see what the caller's open transaction wrote, as ``in_thread`` does.
    with transaction.atomic():
        Group.objects.create(name="uncommitted")
        assert async_to_sync(on_lane)(_names) == {"uncommitted"}


@POSTGRES
async def test_closing_the_lanes_waits_for_the_work_in_flight_and_a_later_run_starts_anew():
    lanes = Lanes(2)
    entered = threading.Event()

    def slow() -> tuple[str, str, str]:
        entered.set()
        time.sleep(0.2)
        return _create("in flight")

    first = asyncio.ensure_future(lanes.run(slow))
    assert await asyncio.to_thread(entered.wait, 10)
    await asyncio.to_thread(lanes.close)
    # Closed only once the hop in flight had stored its row.
    assert await in_thread(_names)() == {"in flight"}
    assert (await first)[0] == "in flight"
    assert (await lanes.run(_create, "after"))[0] == "after"
    lanes.close()
