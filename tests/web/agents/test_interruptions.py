"""A run whose server process died ends for everyone: the sweep closes it with a stored
``finish`` (``stop: "interrupted"``, the saved text), every follower meets it, replays end on
it, and messages sent while the dead run held the slot start the next run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.runs import RunService
from agents.runs.interruptions import close_interrupted
from agents.runs.records import stored_events
from conversations.models import Message, PendingMessage, Run
from conversations.stores import DjangoConversationStore
from orkestrel.core import create_conversation

from .test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)


def _dead_run(conversation, age: timedelta = timedelta(minutes=5)) -> Run:
    """A run whose server died mid-answer: its question stored, a checkpoint, no heartbeat
    for ``age``."""
    store = DjangoConversationStore(owner=conversation.owner)
    convo = create_conversation(id=str(conversation.id))
    convo.add({"role": "user", "content": "question"})
    store.set_sync(convo.snapshot())
    stale = timezone.now() - age
    return Run.objects.create(
        conversation=conversation,
        status=Run.Status.RUNNING,
        content="Half an ans",
        started=stale,
        heartbeat=stale,
    )


def test_a_closed_run_stores_a_finish_that_keeps_its_saved_text(user, conversation):
    run = _dead_run(conversation)
    (closed,) = close_interrupted(stale=60.0)
    assert closed.run_id == run.id and not closed.worker
    (frame,) = stored_events(run.id)
    assert frame == closed.frame
    assert (frame["type"], frame["run"], frame["seq"]) == ("finish", run.id, 1)
    assert frame["result"]["stop"] == "interrupted" and frame["result"]["partial"] is True
    assert frame["result"]["content"] == "Half an ans"
    assert frame["continued_by"] is None
    # Closed once: a second sweep finds nothing.
    assert close_interrupted(stale=60.0) == []


async def test_a_replay_ends_on_the_finish_even_after_frames_the_dead_process_sent(
    user, conversation
):
    run = await sync_to_async(_dead_run)(conversation)
    await sync_to_async(close_interrupted)(60.0)
    service = RunService()
    fresh = [frame async for frame in service.follow(run.id)]
    assert [(f["type"], f["seq"]) for f in fresh] == [("finish", 1)]
    # A follower that saw 40 frames live before the process died gets the end as frame 41.
    late = [frame async for frame in service.follow(run.id, after=40)]
    assert [(f["type"], f["seq"], f["result"]["stop"]) for f in late] == [
        ("finish", 41, "interrupted")
    ]


def test_a_run_closed_by_an_earlier_release_without_its_finish_still_replays_one(
    user, conversation
):
    run = _dead_run(conversation)
    Run.objects.filter(id=run.id).update(status=Run.Status.INTERRUPTED, events=[])
    (frame,) = stored_events(run.id)
    assert (frame["type"], frame["seq"], frame["result"]["content"]) == (
        "finish",
        1,
        "Half an ans",
    )


async def test_a_socket_on_the_conversation_sees_the_closed_run_end_then_the_state(
    user, conversation, manager
):
    # Its heartbeat not yet stale: this manager's own sweep leaves it to the test.
    run = await sync_to_async(_dead_run)(conversation, timedelta(0))
    socket, _ = await connect(user, conversation)
    closed = await sync_to_async(close_interrupted)(0.0)
    await manager.interrupted(closed)
    frames = await frames_until(socket, "state")
    ended = next(f for f in frames if f["type"] == "finish")
    assert ended["run"] == run.id and ended["result"]["stop"] == "interrupted"
    state = frames[-1]
    assert state["run"] is None and state["last_run"]["status"] == "interrupted"
    assert [m["content"] for m in state["messages"]] == ["question", "Half an ans"]
    await socket.disconnect()


async def test_a_message_that_waited_on_a_dead_run_starts_the_next_run_after_the_sweep(
    user, conversation, fast_demo, manager
):
    # Sent while the dead run still held the slot (its heartbeat not yet stale): queued.
    await sync_to_async(_dead_run)(conversation, timedelta(0))
    await sync_to_async(PendingMessage.objects.create)(
        conversation=conversation, content="still there?"
    )
    socket, _ = await connect(user, conversation)

    # Then the sweep finds it stale and closes it: the message is answered.
    await sync_to_async(close_interrupted)(0.0)
    await manager.go_on()
    frames = await frames_until(socket, "finish")
    started = next(f for f in frames if f["type"] == "started")
    assert started["message"]["content"] == "still there?"
    await manager.wait(str(conversation.id))
    assert not await sync_to_async(
        PendingMessage.objects.filter(conversation=conversation).exists
    )()
    users = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation=conversation, role="user").values_list(
                "content", flat=True
            )
        )
    )()
    assert users == ["question", "still there?"]
    await socket.disconnect()


async def test_messages_after_a_failed_run_are_not_started_by_the_sweep(
    user, conversation, fast_demo, manager
):
    run = await sync_to_async(_dead_run)(conversation)
    await sync_to_async(Run.objects.filter(id=run.id).update)(status=Run.Status.ERROR)
    await sync_to_async(PendingMessage.objects.create)(conversation=conversation, content="x")
    await manager.go_on()
    assert manager.active(str(conversation.id)) is None
    assert (
        await sync_to_async(PendingMessage.objects.filter(conversation=conversation).count)() == 1
    )
