"""A stop of a run queued for the workers before any worker claimed it (``workers.stop_queued``):
settled in the database at once, against the claim's conditional ``UPDATE``, and ended for its
followers as a stopped run ends. The processes' side is ``test_celery_queued_stop``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connections

from agents.runs import RunManager, RunService
from agents.runs.groups import join_group
from agents.runs.handoff import Handoff
from agents.runs.records import RunLimits, finish_run, stored_events
from agents.runs.workers import claim_run, prepare_queued, stop_queued
from conversations.models import Run
from conversations.services import create_conversation
from orkestrel.core import Message, mint_id
from orkestrel.db import in_thread

HOLDER = "worker:w1@host"
REASON = "stopped by user"
ROUNDS = 20


def queue(conversation: str, user_id: int, content: str, nonce: str | None = None) -> int:
    """Open a run queued for the workers, as a web process does; its id."""
    message = Message(mint_id(), "user", content)
    return prepare_queued(conversation, user_id, message, "web:test", RunLimits(), nonce=nonce)[1]


def handoff(run_id: int, conversation: str, user_id: int) -> Handoff:
    return Handoff(
        run_id=run_id,
        user_id=user_id,
        conversation_id=conversation,
        message=None,
        nonce=None,
        title="",
    )


@pytest.mark.django_db
def test_a_stop_before_any_claim_settles_the_queued_run_and_the_claim_then_finds_it_settled(
    user, demo
):
    conversation = str(create_conversation(user=user).id)
    run_id = queue(conversation, user.id, "never answered", nonce="n1")

    stop = stop_queued(conversation, REASON)

    assert stop.settled and stop.run_id == run_id and stop.owner_id == user.id
    started, abort, finish = stop.frames
    assert (started["type"], started["run"], started["seq"]) == ("started", run_id, 1)
    assert started["nonce"] == "n1" and started["message"]["content"] == "never answered"
    assert abort == {"type": "abort", "run": run_id, "seq": 2, "reason": REASON}
    assert (finish["type"], finish["run"], finish["seq"]) == ("finish", run_id, 3)
    assert finish["result"] == {
        "content": "",
        "thinking": None,
        "usage": None,
        "partial": True,
        "stop": "abort",
    }
    assert set(finish["context"]) >= {"used", "window"}
    # Replayed from the database as sent.
    assert stored_events(run_id) == list(stop.frames)
    row = Run.objects.get(id=run_id)
    assert (row.status, row.stop_reason, row.content, row.holder) == ("partial", "abort", "", "")
    assert row.finished is not None and row.started is None

    # The worker that takes its message afterwards runs nothing; a second stop finds nothing.
    assert claim_run(handoff(run_id, conversation, user.id), HOLDER) == "settled"
    assert Run.objects.get(id=run_id).status == "partial"
    assert not stop_queued(conversation, REASON).settled
    # The conversation's run slot is free: the next message opens a new run.
    assert queue(conversation, user.id, "next one") != run_id


@pytest.mark.django_db
def test_a_stop_leaves_a_run_a_worker_has_claimed_to_that_worker(user, demo):
    conversation = str(create_conversation(user=user).id)
    run_id = queue(conversation, user.id, "claimed first")
    assert claim_run(handoff(run_id, conversation, user.id), HOLDER) == "claimed"

    stop = stop_queued(conversation, REASON)

    assert not stop.settled and stop.run_id == run_id
    row = Run.objects.get(id=run_id)
    assert (row.status, row.holder, row.stop_reason) == ("running", HOLDER, "")


@pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"),
    reason="two connections racing need a database server (SQLite runs one writer at a time)",
)
@pytest.mark.django_db(transaction=True)
def test_a_stop_racing_a_claim_either_settles_the_run_or_leaves_it_to_the_worker_never_both(
    user, demo
):
    conversation = str(create_conversation(user=user).id)
    outcomes: Counter[str] = Counter()
    for _ in range(ROUNDS):
        run_id = queue(conversation, user.id, "race")
        start = threading.Barrier(2)

        def claim(run_id: int = run_id, start: threading.Barrier = start) -> str:
            start.wait()
            try:
                # One read first, as the stop makes one: either may reach its UPDATE first.
                Run.objects.filter(id=run_id).exists()
                return claim_run(handoff(run_id, conversation, user.id), HOLDER)
            finally:
                connections.close_all()

        def stop(run_id: int = run_id, start: threading.Barrier = start) -> Any:
            start.wait()
            try:
                return stop_queued(conversation, REASON, run_id)
            finally:
                connections.close_all()

        with ThreadPoolExecutor(2) as pool:
            claiming, stopping = pool.submit(claim), pool.submit(stop)
            claimed, stopped = claiming.result(), stopping.result()
        row = Run.objects.get(id=run_id)
        if stopped.settled:
            # The stop won: the worker does nothing, the run ended as stopped.
            assert claimed == "settled"
            assert (row.status, row.stop_reason, row.holder) == ("partial", "abort", "")
            assert stored_events(run_id) == list(stopped.frames)
            outcomes["stopped"] += 1
        else:
            # The claim won: the stop is the worker's to hear (it goes through the layer).
            assert claimed == "claimed" and stopped.run_id == run_id
            assert (row.status, row.stop_reason, row.holder) == ("running", "", HOLDER)
            outcomes["claimed"] += 1
            finish_run(run_id, "done", None, "")  # the worker's run ends; the next round
    assert sum(outcomes.values()) == ROUNDS


@pytest.mark.django_db(transaction=True)
async def test_the_stop_button_of_a_queued_run_ends_it_for_its_followers_and_its_replay(user, demo):
    manager = RunManager(workers=True)
    conversation = str((await sync_to_async(create_conversation)(user=user)).id)
    run_id = await in_thread(queue)(conversation, user.id, "stop me", "n1")
    seen: list[dict[str, Any]] = []
    ended = asyncio.Event()

    async def follower(frame: dict[str, Any]) -> None:
        seen.append(frame)
        if frame["type"] == "finish":
            ended.set()

    manager.subscribe(conversation, follower)
    assert manager.abort(conversation, REASON)
    await asyncio.wait_for(ended.wait(), 10)

    assert [(f["type"], f["seq"]) for f in seen] == [("started", 1), ("abort", 2), ("finish", 3)]
    assert seen[-1]["result"]["stop"] == "abort"
    replay = [frame async for frame in RunService(manager).follow(run_id)]
    assert replay == seen


@pytest.mark.django_db(transaction=True)
async def test_a_stop_for_a_claimed_run_is_sent_again_until_its_worker_hears_it_and_it_settles(
    user, demo
):
    manager = RunManager(workers=True)
    conversation = str((await sync_to_async(create_conversation)(user=user)).id)
    run_id = await in_thread(queue)(conversation, user.id, "claimed")
    await in_thread(claim_run)(handoff(run_id, conversation, user.id), HOLDER)
    layer = get_channel_layer()
    group = join_group(conversation)
    early = await layer.new_channel()
    await layer.group_add(group, early)

    sending = asyncio.create_task(manager.send_stop(conversation, REASON, run_id))
    first = await asyncio.wait_for(layer.receive(early), 10)
    # The worker that claimed the run starts listening only now: the next send reaches it.
    late = await layer.new_channel()
    await layer.group_add(group, late)
    heard = await asyncio.wait_for(layer.receive(late), 10)

    assert first == heard
    assert (heard["type"], heard["run"], heard["reason"]) == ("run.cancel", run_id, REASON)
    # Once the run has settled, the sends stop (well before their bound).
    await in_thread(finish_run)(run_id, "partial", None, "", "abort")
    await asyncio.wait_for(sending, 3)
    await layer.group_discard(group, early)
    await layer.group_discard(group, late)


@pytest.mark.django_db(transaction=True)
async def test_a_queued_run_stopped_ends_as_a_run_stopped_before_its_first_word_in_the_web_process(
    user, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 5.0}
    here = RunService(RunManager(workers=False))
    conversation = str((await sync_to_async(create_conversation)(user=user)).id)
    handle = await here.start(user_id=user.id, conversation_id=conversation, content="hello")
    async for frame in here.follow(handle.id):
        if frame["type"] == "request_start":
            break  # asking the model: no word yet
    assert here.cancel(conversation, REASON)
    ran = [frame async for frame in here.follow(handle.id)]
    await here.wait(handle.id)
    stopped = await in_thread(stop_queued)(
        conversation, REASON, await in_thread(queue)(conversation, user.id, "queued")
    )

    abort, finish = ran[-2:]
    queued_abort, queued_finish = stopped.frames[-2:]
    assert queued_abort["reason"] == abort["reason"] == REASON
    # The same result, but for the model it called: a queued run never asked one.
    called = {"model": "demo/echo", "response_model": ""}
    assert {key: finish["result"].pop(key) for key in called} == called
    assert queued_finish["result"] == finish["result"]
    assert set(queued_finish["context"]) == set(finish["context"])
    rows = {
        run.id: (run.status, run.stop_reason, run.content)
        async for run in Run.objects.filter(conversation_id=conversation)
    }
    assert rows[handle.id] == rows[stopped.run_id] == ("partial", "abort", "")
