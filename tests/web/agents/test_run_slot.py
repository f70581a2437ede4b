"""The run slot in the database: one run per conversation across processes, a per-user cap,
heartbeats, dead runs closed with their text, and failed runs that keep what streamed."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import AgentProfile, ProviderEndpoint, bump_config_revision
from agents.runs import Busy, RunManager, RunService, RunTimings
from agents.runs.errors import StartFailed, TooManyRuns
from agents.runs.interruptions import close_interrupted
from agents.runs.records import finish_run, save_checkpoints
from conversations.models import Conversation, Message, Run
from tests.providers.server import Reply, StubServer, sse

pytestmark = pytest.mark.django_db(transaction=True)


def user_messages(conversation):
    return list(
        Message.objects.filter(conversation=conversation, role="user").values_list(
            "content", flat=True
        )
    )


async def test_two_processes_racing_on_one_conversation_start_one_run(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    first, second = RunManager(), RunManager()  # two server processes' managers
    outcomes = await asyncio.gather(
        first.start(user_id=user.id, conversation_id=str(conversation.id), content="from A"),
        second.start(user_id=user.id, conversation_id=str(conversation.id), content="from B"),
        return_exceptions=True,
    )
    busy = [o for o in outcomes if isinstance(o, Busy)]
    started = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(busy) == 1 and len(started) == 1
    winner = started[0]
    await winner.task
    stored = await sync_to_async(user_messages)(conversation)
    assert len(stored) == 1 and stored[0] in ("from A", "from B")
    assert await sync_to_async(Run.objects.filter(conversation=conversation).count)() == 1


async def test_a_user_over_the_run_cap_is_refused_clearly_and_nothing_is_stored(
    user, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05, "MAX_RUNS_PER_USER": 2}
    conversations = [
        await sync_to_async(Conversation.objects.create)(owner=user, profile=demo) for _ in range(3)
    ]
    manager = RunManager()
    for conversation in conversations[:2]:
        await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="go")
    third = str(conversations[2].id)
    with pytest.raises(TooManyRuns, match="at most 2 at once"):
        await manager.start(user_id=user.id, conversation_id=third, content="no")
    assert await sync_to_async(user_messages)(conversations[2]) == []
    for conversation in conversations[:2]:
        manager.abort(str(conversation.id))
        await manager.wait(str(conversation.id))


async def test_a_running_runs_heartbeat_moves_with_its_checkpoints(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05}
    manager = RunManager(timings=RunTimings(checkpoint=0.1))
    active = await manager.start(
        user_id=user.id, conversation_id=str(conversation.id), content="beat " * 20
    )
    first = await sync_to_async(lambda: Run.objects.get(id=active.run_id).heartbeat)()
    await asyncio.sleep(0.35)  # the contract is time: three checkpoint periods
    later = await sync_to_async(lambda: Run.objects.get(id=active.run_id).heartbeat)()
    assert later > first
    manager.abort(str(conversation.id))
    await manager.wait(str(conversation.id))


def test_a_checkpoint_landing_after_the_settle_leaves_the_final_text(conversation):
    # The checkpointer can take a run's text while its settle commits (the answer's message
    # has just claimed the reasoning): its write, queued behind the settle, must change nothing.
    settled = Run.objects.create(
        conversation=conversation, status="running", started=timezone.now(), holder="here"
    )
    finish_run(settled.id, "error", None, "cut", partial=("the answer", "the reasoning"))
    running = Run.objects.create(
        conversation=Conversation.objects.create(
            owner=conversation.owner, profile=conversation.profile
        ),
        status="running",
        started=timezone.now(),
        holder="here",
    )
    save_checkpoints([(settled.id, "the answer", ""), (running.id, "half", "thought")])
    settled.refresh_from_db()
    running.refresh_from_db()
    assert (settled.status, settled.content, settled.thinking) == (
        "error",
        "the answer",
        "the reasoning",
    )
    assert (running.content, running.thinking) == ("half", "thought")


def _dead_run(conversation, content="half an answ", beat=timedelta(minutes=1)):
    return Run.objects.create(
        conversation=conversation,
        status="running",
        started=timezone.now() - beat,
        heartbeat=timezone.now() - beat,
        holder="a-killed-process",
        content=content,
    )


async def test_a_start_closes_a_dead_run_keeping_its_text_and_a_live_one_is_busy(
    user, conversation, fast_demo
):
    dead = await sync_to_async(_dead_run)(conversation)
    manager = RunManager()
    active = await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="x")
    await active.task
    dead = await sync_to_async(Run.objects.get)(id=dead.id)
    assert dead.status == "interrupted" and dead.stop_reason == "interrupted"
    roles = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation).values_list("role", "content")
    )
    assert roles[0] == ("assistant", "half an answ") and roles[1] == ("user", "x")
    # A run another live process holds (fresh heartbeat) is never taken over.
    await sync_to_async(_dead_run)(conversation, beat=timedelta(0))
    with pytest.raises(Busy):
        await RunManager().start(user_id=user.id, conversation_id=str(conversation.id), content="y")


async def test_a_compact_waits_while_another_process_holds_the_conversations_run(
    user, conversation, fast_demo
):
    manager = RunManager()
    for text in ("first question", "second question", "third question"):
        active = await manager.start(
            user_id=user.id, conversation_id=str(conversation.id), content=text
        )
        await active.task
    before = await sync_to_async(Message.objects.filter(conversation=conversation).count)()
    # Another web process or a worker runs the conversation now (its heartbeat is fresh).
    live = await sync_to_async(_dead_run)(conversation, beat=timedelta(0))
    with pytest.raises(Busy):
        await manager.compact(user_id=user.id, conversation_id=str(conversation.id), focus=None)
    folded = await sync_to_async(
        Message.objects.filter(conversation=conversation, section__isnull=False).count
    )()
    assert folded == 0
    assert await sync_to_async(Message.objects.filter(conversation=conversation).count)() == before
    # Once that run has settled, the history is the user's to fold.
    await sync_to_async(Run.objects.filter(id=live.id).update)(status="done")
    section = await manager.compact(
        user_id=user.id, conversation_id=str(conversation.id), focus=None
    )
    assert section is not None


def test_the_sweep_closes_only_runs_whose_heartbeat_is_stale(user, conversation):
    stale = _dead_run(conversation)
    other = Conversation.objects.create(owner=user, profile=conversation.profile)
    fresh = _dead_run(other, beat=timedelta(0))
    assert len(close_interrupted(stale=10.0)) == 1
    assert Run.objects.get(id=stale.id).status == "interrupted"
    assert Run.objects.get(id=fresh.id).status == "running"


def _broken_profile(url: str) -> AgentProfile:
    endpoint = ProviderEndpoint.objects.create(
        name="flaky", kind="openai", base_url=url, max_retries=0
    )
    return AgentProfile.objects.create(slug="flaky", name="flaky", model=f"{endpoint.name}/m")


async def test_a_failed_run_keeps_what_streamed_and_its_error(user):
    server = StubServer().start()
    try:
        chunks = sse(
            {"choices": [{"index": 0, "delta": {"content": "Half of "}}]},
            {"choices": [{"index": 0, "delta": {"content": "an answer"}}]},
        )
        server.enqueue(Reply(chunks=chunks, drop_after=2))
        profile = await sync_to_async(_broken_profile)(server.url)
        conversation = await sync_to_async(Conversation.objects.create)(owner=user, profile=profile)
        service = RunService(RunManager())
        handle = await service.start(
            user_id=user.id, conversation_id=str(conversation.id), content="hi"
        )
        frames = [frame async for frame in service.follow(handle.id)]
    finally:
        server.stop()
    assert frames[-1]["type"] == "error" and frames[-1]["code"] == "run_failed"
    run = await sync_to_async(Run.objects.get)(id=handle.id)
    assert run.status == "error" and run.error and run.content == "Half of an answer"
    last = await sync_to_async(
        lambda: Message.objects.filter(conversation=conversation).order_by("-position").first()
    )()
    assert (last.role, last.content) == ("assistant", "Half of an answer")
    assert json.loads(json.dumps(frames))  # every frame encodes


def _unbuildable_profile() -> AgentProfile:
    endpoint = ProviderEndpoint.objects.create(
        name="broken", kind="openai", base_url="http://127.0.0.1:9", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="broken", name="broken", model="broken/m")
    # Behind the model's validation, as a hand edit of the database would leave it: a key
    # variable the project reads itself, which reading the key refuses.
    ProviderEndpoint.objects.filter(pk=endpoint.pk).update(api_key_env="SECRET_KEY")
    bump_config_revision()
    return profile


async def test_a_run_that_cannot_be_built_ends_as_an_error_and_frees_the_slot(user):
    profile = await sync_to_async(_unbuildable_profile)()
    conversation = await sync_to_async(Conversation.objects.create)(owner=user, profile=profile)
    manager = RunManager()
    for attempt in ("first", "second"):  # the second is not refused as busy
        with pytest.raises(StartFailed, match="SECRET_KEY"):
            await manager.start(
                user_id=user.id, conversation_id=str(conversation.id), content=attempt
            )
    statuses = await sync_to_async(list)(
        Run.objects.filter(conversation=conversation).values_list("status", flat=True)
    )
    assert statuses == ["error", "error"]
    assert await sync_to_async(user_messages)(conversation) == ["first", "second"]
