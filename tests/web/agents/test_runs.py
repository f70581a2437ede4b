"""The run manager over the real runtime, the real database and the demo model."""

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async

from agents.runs import RunManager, RunService, RunTimings, close_interrupted
from agents.runs.records import close_run, owned_run
from conversations.models import AuthorityDecision, Message, Run
from conversations.pending import queue_pending

pytestmark = pytest.mark.django_db(transaction=True)


class Collector:
    def __init__(self):
        self.frames = []
        self.times = []

    async def __call__(self, frame):
        self.frames.append(frame)
        self.times.append(time.monotonic())

    def types(self):
        return [f["type"] for f in self.frames]


async def run_to_end(manager, user, conversation, text):
    frames = Collector()
    manager.subscribe(str(conversation.id), frames)
    await manager.start(user_id=user.id, conversation_id=str(conversation.id), content=text)
    await manager.wait(str(conversation.id))
    await manager.drain()
    return frames


async def test_a_run_streams_numbered_frames_and_commits_everything(user, conversation, fast_demo):
    frames = await run_to_end(RunManager(), user, conversation, "hello there")
    types = frames.types()
    assert types[0] == "started" and types[-1] == "finish"
    assert "token" in types and "committed" in types
    seqs = [f["seq"] for f in frames.frames]
    assert seqs == list(range(1, len(seqs) + 1))
    text = "".join(f["content"] for f in frames.frames if f["type"] == "token")
    assert text.startswith("You said: hello there")
    rows = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("role", "content")
    )
    assert rows[0] == ("user", "hello there")
    assert rows[-1] == ("assistant", text)
    run = await sync_to_async(Run.objects.get)(conversation=conversation)
    assert run.status == "done" and run.stop_reason == "done" and run.finished is not None


async def test_a_tool_run_sends_a_tool_frame_and_commits_each_turn(user, conversation, fast_demo):
    frames = await run_to_end(RunManager(), user, conversation, "list my files please")
    tool = next(f for f in frames.frames if f["type"] == "tool")
    assert tool["call"]["name"] == "workspace" and tool["denied"] is False
    assert "value" in tool["result"]
    committed = [m for f in frames.frames if f["type"] == "committed" for m in f["messages"]]
    assert [m["role"] for m in committed] == ["assistant", "tool", "assistant"]
    roles = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("role", flat=True)
    )
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_a_second_send_while_busy_is_refused(user, conversation, demo, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    from agents.runs import Busy

    manager = RunManager()
    await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="one")
    with pytest.raises(Busy):
        await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="two")
    manager.abort(str(conversation.id))
    await manager.wait(str(conversation.id))


async def test_abort_keeps_the_partial_answer(user, conversation, demo, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    manager = RunManager()
    frames = Collector()
    manager.subscribe(str(conversation.id), frames)
    await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="hello")
    while "token" not in frames.types():
        await asyncio.sleep(0.01)
    manager.abort(str(conversation.id))
    await manager.wait(str(conversation.id))
    await manager.drain()
    types = frames.types()
    assert types[-2:] == ["abort", "finish"]
    finish = frames.frames[-1]["result"]
    assert finish["partial"] is True and finish["stop"] == "abort"
    streamed = "".join(f["content"] for f in frames.frames if f["type"] == "token")
    assert finish["content"] == streamed and streamed
    last = await sync_to_async(
        lambda: Message.objects.filter(conversation=conversation).order_by("-position").first()
    )()
    assert last.role == "assistant" and last.content == streamed
    run = await sync_to_async(Run.objects.get)(conversation=conversation)
    assert run.status == "partial" and run.stop_reason == "abort"


async def test_denied_tool_is_recorded_and_never_runs(user, fast_demo):
    from agents.models import AuthorityPolicy, AuthorityRule
    from conversations.models import Conversation

    def setup():
        policy = AuthorityPolicy.objects.create(name="no files")
        AuthorityRule.objects.create(
            policy=policy, position=1, tool_glob="work*", reason="files are off limits"
        )
        fast_demo.authority_policy = policy
        fast_demo.save()
        return Conversation.objects.create(owner=user, profile=fast_demo)

    conversation = await sync_to_async(setup)()
    frames = await run_to_end(RunManager(), user, conversation, "show my files")
    tool = next(f for f in frames.frames if f["type"] == "tool")
    assert tool["denied"] is True and tool["reason"] == "files are off limits"
    decision = await sync_to_async(AuthorityDecision.objects.get)(conversation=conversation)
    assert decision.allowed is False and decision.tool_name == "workspace"
    assert decision.rule_label.startswith("#1 work*")


async def test_user_message_is_durable_before_the_run_starts(user, conversation, demo, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05}
    manager = RunManager()
    await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="keep me")
    stored = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation=conversation).values_list("content", flat=True)
        )
    )()
    assert stored == ["keep me"]
    manager.abort(str(conversation.id))
    await manager.wait(str(conversation.id))


def test_unfinished_runs_are_closed_as_interrupted_keeping_their_text(user, conversation):
    from conversations.stores import DjangoConversationStore
    from orkestrel.core import create_conversation

    store = DjangoConversationStore(owner=user)
    convo = create_conversation(id=str(conversation.id))
    convo.add({"role": "user", "content": "question"})
    store.set_sync(convo.snapshot())
    Run.objects.create(conversation=conversation, status="running", content="half an ans")
    assert len(close_interrupted()) == 1
    run = Run.objects.get(conversation=conversation)
    assert run.status == "interrupted"
    contents = list(
        Message.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("content", flat=True)
    )
    assert contents == ["question", "half an ans"]


def _fetch_only_conversation(user, profile):
    """A conversation on ``profile`` scoped to ``http_fetch``: asking for files then fails."""
    from agents.models import Scope
    from conversations.models import Conversation

    profile.scope = Scope.objects.create(name="fetch only", tools=["http_fetch"])
    profile.save()
    return Conversation.objects.create(owner=user, profile=profile)


async def test_profile_scope_hides_tools_the_model_then_cannot_call(user, fast_demo):
    conversation = await sync_to_async(_fetch_only_conversation)(user, fast_demo)
    frames = await run_to_end(RunManager(), user, conversation, "list my files")
    tool = next(f for f in frames.frames if f["type"] == "tool")
    assert tool["result"] == {"error": "tool not found: workspace"}


async def test_a_failed_tool_call_is_recorded_so_its_card_reads_as_an_error_after_reload(
    user, fast_demo
):
    from conversations.models import ToolFailure
    from conversations.services import conversation_state

    conversation = await sync_to_async(_fetch_only_conversation)(user, fast_demo)
    frames = await run_to_end(RunManager(), user, conversation, "list my files")
    call = next(f for f in frames.frames if f["type"] == "tool")["call"]
    failure = await sync_to_async(ToolFailure.objects.get)(conversation=conversation)
    assert failure.tool_call_id == call["id"] and failure.tool_name == "workspace"
    assert failure.error == "tool not found: workspace" and failure.run_id is not None
    state = await sync_to_async(conversation_state)(user=user, conversation_id=conversation.id)
    assert state["failures"] == [call["id"]] and state["denials"] == {}


async def test_a_denied_call_is_a_denial_not_a_failure(user, fast_demo):
    from agents.models import AuthorityPolicy, AuthorityRule
    from conversations.models import Conversation, ToolFailure

    def setup():
        policy = AuthorityPolicy.objects.create(name="no files")
        AuthorityRule.objects.create(policy=policy, position=1, tool_glob="work*", reason="no")
        fast_demo.authority_policy = policy
        fast_demo.save()
        return Conversation.objects.create(owner=user, profile=fast_demo)

    conversation = await sync_to_async(setup)()
    await run_to_end(RunManager(), user, conversation, "show my files")
    assert not await sync_to_async(ToolFailure.objects.filter(conversation=conversation).exists)()


async def test_an_untitled_conversation_is_named_after_its_first_message(user, fast_demo):
    from conversations.models import Conversation

    conversation = await sync_to_async(Conversation.objects.create)(owner=user, profile=fast_demo)
    frames = await run_to_end(RunManager(), user, conversation, "  Plan   a trip to Lisbon  ")
    await conversation.arefresh_from_db()
    assert conversation.title == "Plan a trip to Lisbon"
    usage = next(f for f in frames.frames if f["type"] == "usage")
    assert usage["usage"]["total"] > 0 and usage["total"]["total"] >= usage["usage"]["total"]
    assert usage["context"]["window"] == 8000 and usage["context"]["used"] > 0


async def test_started_frame_carries_the_conversation_title(user, fast_demo):
    from conversations.models import Conversation

    conversation = await sync_to_async(Conversation.objects.create)(owner=user, profile=fast_demo)
    frames = await run_to_end(RunManager(), user, conversation, "Name me after this")
    assert frames.frames[0]["type"] == "started"
    assert frames.frames[0]["title"] == "Name me after this"


async def test_the_in_flight_answer_is_checkpointed_every_second(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.03}
    manager = RunManager()
    frames = Collector()
    manager.subscribe(str(conversation.id), frames)
    active = await manager.start(
        user_id=user.id, conversation_id=str(conversation.id), content="checkpoint me"
    )
    await asyncio.sleep(1.3)
    saved = await sync_to_async(lambda: Run.objects.get(id=active.run_id).content)()
    assert saved and active.content.startswith(saved)
    manager.abort(str(conversation.id))
    await manager.wait(str(conversation.id))
    run = await sync_to_async(Run.objects.get)(id=active.run_id)
    assert run.status == "partial" and run.content.startswith(saved)


async def test_finish_frame_carries_the_context_meter_even_after_a_stop(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    manager = RunManager()
    frames = Collector()
    manager.subscribe(str(conversation.id), frames)
    await manager.start(user_id=user.id, conversation_id=str(conversation.id), content="meter")
    while "token" not in frames.types():
        await asyncio.sleep(0.01)
    manager.abort(str(conversation.id))
    await manager.wait(str(conversation.id))
    await manager.drain()
    finish = frames.frames[-1]
    assert finish["type"] == "finish"
    assert finish["context"]["window"] == 8000 and finish["context"]["used"] > 0


# -- pacing of text frames ---------------------------------------------------------------------
# The demo model thinks (8 words), then answers; think and token frames share the pacing.


def text_frames(frames, kinds=("think", "token")):
    return [
        (at, f) for at, f in zip(frames.times, frames.frames, strict=True) if f["type"] in kinds
    ]


async def test_a_stream_slower_than_the_tick_is_sent_delta_by_delta_without_waiting(
    user, conversation, demo, settings
):
    # A one-second tick: holding deltas for a tick (trailing coalescing) would show at once.
    timings = RunTimings(tick=1.0)
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05}
    frames = await run_to_end(RunManager(timings=timings), user, conversation, "one two three four")

    started = frames.times[frames.types().index("started")]
    burst = text_frames(frames)[: timings.burst]
    # Each word its own frame, on the heels of the one before: nothing waited for the tick.
    assert len(burst) == timings.burst
    assert all(len(f["content"].split()) == 1 for _, f in burst)
    times = [started] + [at for at, _ in burst]
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) < 0.4
    tokens = "".join(f["content"] for _, f in text_frames(frames, ("token",)))
    assert tokens == frames.frames[-1]["result"]["content"]


async def test_a_fast_stream_gets_at_most_one_frame_per_tick_after_its_burst(
    user, conversation, demo, settings
):
    timings = RunTimings(tick=0.05)
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.002}
    frames = await run_to_end(
        RunManager(timings=timings), user, conversation, " ".join(["w"] * 150)
    )

    texts = text_frames(frames)
    span = texts[-1][0] - texts[0][0]
    # +3: the first frame, one flush that carries a think and a token frame together, and the
    # flush the closing usage frame forces.
    assert len(texts) <= timings.burst + span * timings.refill / 0.05 + 3
    assert len(texts) < 60  # against about 180 deltas
    tokens = "".join(f["content"] for _, f in text_frames(frames, ("token",)))
    assert tokens == frames.frames[-1]["result"]["content"]


async def test_text_frames_keep_the_gap_so_deltas_close_together_share_one(
    user, conversation, demo, settings
):
    # Deltas closer than the gap (a provider catching up after a stall) are not a frame each,
    # even while the run still has credit for a burst.
    timings = RunTimings(gap=0.1)
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    frames = await run_to_end(
        RunManager(timings=timings), user, conversation, "a b c d e f g h i j k l"
    )

    texts = text_frames(frames)
    deltas = sum(len(f["content"].split(" ")) for _, f in texts)
    assert 3 <= len(texts) <= deltas / 3
    # Paced frames keep the gap; the last may be flushed early by the closing usage frame.
    paced = text_frames(frames, ("token",))[:-1]
    assert len(paced) >= 2
    assert all(b - a >= 0.09 for (a, _), (b, _) in zip(paced, paced[1:], strict=False))


async def test_a_batched_follow_gets_ready_frames_together_and_idle_cues_in_between(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05}
    service = RunService(RunManager())
    handle = await service.start(
        user_id=user.id, conversation_id=str(conversation.id), content="one two three"
    )
    batches = [b async for b in service.follow_batches(handle.id, idle=0.01)]
    frames = [f for b in batches if b is not None for f in b]
    assert None in batches  # a 50 ms word is longer than the 10 ms idle cue
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert frames == [f async for f in service.follow(handle.id)]


def test_a_runs_last_hop_stores_its_frames_and_says_whether_messages_wait(user, conversation):
    run = Run.objects.create(conversation=conversation, status="done")
    frames = [{"type": "started", "run": run.pk, "seq": 1}, {"type": "finish", "seq": 2}]

    assert close_run(run.pk, str(conversation.id), frames) is False
    assert Run.objects.get(pk=run.pk).events == frames

    queue_pending(user.id, str(conversation.id), "meanwhile", (), None)
    assert close_run(run.pk, str(conversation.id), frames) is True


def test_a_run_is_read_only_by_its_conversations_owner_and_an_id_out_of_range_is_none(
    user, other, conversation
):
    run = Run.objects.create(conversation=conversation, status="done", content="the answer")

    record = owned_run(user.id, run.pk)

    assert record is not None and (record.id, record.content) == (run.pk, "the answer")
    assert record.conversation_id == str(conversation.id) and record.status == "done"
    assert owned_run(other.id, run.pk) is None
    assert owned_run(user.id, 2**64) is None


async def test_waiting_on_a_conversation_covers_a_run_released_a_moment_ago(
    user, conversation, fast_demo
):
    manager = RunManager()
    finished = asyncio.Event()

    async def watch(frame):
        if frame["type"] == "finish":
            finished.set()

    manager.subscribe(str(conversation.id), watch)
    handle = await manager.start(
        user_id=user.id, conversation_id=str(conversation.id), content="hello"
    )
    # The finish frame goes out as the run releases its slot; its frames are stored after.
    await finished.wait()
    assert manager.active(str(conversation.id)) is None

    await manager.wait(str(conversation.id))

    # Its task has ended (a test's teardown may empty the database now): nothing is in flight.
    task = manager.run(handle.run_id).task
    assert task is not None and task.done()
    stored = await sync_to_async(Run.objects.get)(pk=handle.run_id)
    assert [frame["type"] for frame in stored.events][-1] == "finish"


async def test_quiet_waits_for_every_run_of_the_process_to_end(user, conversation, fast_demo):
    manager = RunManager()
    handle = await manager.start(
        user_id=user.id, conversation_id=str(conversation.id), content="hello"
    )

    await manager.quiet()

    task = manager.run(handle.run_id).task
    assert task is not None and task.done() and manager.active(str(conversation.id)) is None
