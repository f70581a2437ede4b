"""The run manager: the lifecycle of every run of this process.

It starts runs (at most one per conversation), stops and compacts them, and composes the
parts that serve them: local fan-out (``fanout``), the cross-process relay (``relay``),
checkpoints (``checkpoints``) and pacing (``pacing``), all timed by one ``RunTimings``. With
runs on workers, a web process's manager stores the message and opens the run as ever, then
hands it to the broker (``Dispatched``); the worker's own manager ``adopt``s it. A stop of a
run no worker has claimed yet settles it here (``stop_elsewhere``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from conversations.approvals import ready_runs
from conversations.branches import Redo
from conversations.pending import has_pending
from orkestrel.core import Message, TokenUsage, mint_id
from orkestrel.core.documents import Document
from orkestrel.db import in_thread, on_lane
from orkestrel.protocol import (
    ApprovalFrame,
    CommittedFrame,
    ErrorFrame,
    NoticeFrame,
    PendingFrame,
    QuestionFrame,
    encode,
)

from ..runtime.overrides import RunOverrides
from ..runtime.session import ChatSession
from ..runtime.spec import LoadedSession, ModelUnavailable
from ..runtime.summarizer import CompactionFailed, make_summarizer
from ..runtime.usage import UsageRecorder
from ..usage.charge import current_key
from ..usage.enforcement import WARNING_CODE, QuotaExceeded, QuotaWarning, enforce
from .active import ActiveRun
from .checkpoints import Checkpointer, Sweeper
from .errors import Busy, NothingPending, NotPaused, StartFailed, TooManyRuns
from .fanout import FanOut, Subscriber, spawn
from .groups import join_group
from .handoff import Handoff
from .interruptions import Interrupted, name_continuation, stranded
from .payloads import committed_payload, compaction_payload
from .records import (
    ConversationSeed,
    RunLimits,
    close_run,
    finish_run,
    prepare_run,
    run_going,
)
from .relay import Relay
from .timings import DEFAULT_TIMINGS, RunTimings
from .workers import (
    CONTINUED,
    Prepared,
    QueuedStop,
    Takeover,
    prepare_queued,
    publish_run,
    still_running,
    stop_queued,
    takeovers,
)

__all__ = ["MANUAL_KEEP", "RECENT_RUNS", "Busy", "Dispatched", "RunManager", "run_manager"]

logger = logging.getLogger(__name__)

MANUAL_KEEP = 2
# Settled runs kept in memory for followers while their frames are being stored (and a while
# after: a follower that reconnects at once replays from memory, not from the database).
RECENT_RUNS = 256
# A stop sent to a worker that claimed the run a moment ago may come before it listens: it
# is sent again this often while the run is running, at most this many times.
STOP_RESEND_SECONDS = 0.5
STOP_SENDS = 10


@dataclass(frozen=True, slots=True)
class Dispatched:
    """A run handed to the Celery workers: its id, and its first frame as the worker sends it
    (``frames[0]``, as an ``ActiveRun``'s)."""

    run_id: int
    conversation_id: str
    frames: tuple[dict[str, Any], ...]


def _checked(
    gate: Callable[[], None] | None,
    quota: Callable[[], list[QuotaWarning]] | None,
    prepare: Callable[..., Prepared],
    *args: Any,
    **kwargs: Any,
) -> tuple[list[QuotaWarning], Prepared]:
    """``prepare`` after the gate (which raises to store nothing) and the quota check
    (``None``: none for this start), in one hop."""
    if gate is not None:
        gate()
    warnings = quota() if quota is not None else []
    return warnings, prepare(*args, **kwargs)


class RunManager:
    """Every run of this process, keyed by conversation; at most one run per conversation.

    ``workers`` says whether runs go to Celery workers instead of running here (``None``:
    ``ORKESTREL["RUNS_ON"]`` decides, at each start); a worker's own manager runs them here,
    and ``share_all`` publishes all their frames to the layer (``Relay``).
    """

    def __init__(
        self,
        *,
        origin: str | None = None,
        timings: RunTimings = DEFAULT_TIMINGS,
        workers: bool | None = None,
        share_all: bool = False,
    ) -> None:
        self.origin = origin or uuid.uuid4().hex
        self.timings = timings
        self._workers = workers
        self._runs: dict[str, ActiveRun] = {}
        # The same runs by run id, and the most recently settled ones (oldest first).
        self._by_run: dict[int, ActiveRun] = {}
        self._recent: dict[int, ActiveRun] = {}
        # A released run's task goes on a moment (its frames stored, the next run from
        # pending): by conversation, until it ends, for ``wait``.
        self._ending: dict[str, asyncio.Task[None]] = {}
        self._starting: set[str] = set()
        # Frames of this process's runs reach other processes through the relay; frames of
        # runs held elsewhere reach this process's subscribers through the same fan-out.
        self._fanout = FanOut(
            lambda conversation_id, frame: self.relay.forward(conversation_id, frame)
        )
        self.relay = Relay(
            self, self._fanout, origin=self.origin, timings=timings, share_all=share_all
        )
        self._checkpoints = Checkpointer(
            timings.checkpoint,
            rows=lambda: [row for run in list(self._runs.values()) if (row := run.checkpoint())],
            alive=lambda: [run.run_id for run in list(self._runs.values())],
        )
        self.sweeper = Sweeper(
            timings.sweep, timings.stale, then=self.go_on, closed=self.interrupted
        )

    # -- runs and subscribers -----------------------------------------------------------------

    def subscribe(self, conversation_id: str, subscriber: Subscriber) -> Callable[[], None]:
        """Deliver this conversation's frames to ``subscriber``; returns the unsubscribe."""
        return self._fanout.subscribe(conversation_id, subscriber)

    def active(self, conversation_id: str) -> ActiveRun | None:
        return self._runs.get(conversation_id)

    def running(self) -> list[ActiveRun]:
        """Every run this process holds now."""
        return list(self._runs.values())

    def run(self, run_id: int) -> ActiveRun | None:
        """The run ``run_id`` if this process runs it or settled it recently."""
        return self._by_run.get(run_id) or self._recent.get(run_id)

    @property
    def on_workers(self) -> bool:
        """Whether this process hands its runs to Celery workers rather than running them."""
        if self._workers is not None:
            return self._workers
        return bool(settings.ORKESTREL.get("RUNS_ON") == "workers")

    def busy(self, conversation_id: str) -> bool:
        return conversation_id in self._runs or conversation_id in self._starting

    def publish(self, conversation_id: str, frame: dict[str, Any]) -> None:
        """Queue ``frame`` for delivery, in order, to every socket on the conversation."""
        # Decided now, not when the publisher gets to it: by then the run may be released.
        share = self.relay.share(conversation_id, str(frame.get("type")))
        self._fanout.publish(conversation_id, frame, share)

    async def drain(self) -> None:
        """Wait until every queued frame was delivered (tests and shutdown)."""
        await self._fanout.drain()

    async def checkpoints_done(self) -> None:
        """Wait for a checkpoint write in flight, if any."""
        await self._checkpoints.done()

    # -- runs ---------------------------------------------------------------------------------

    async def start(
        self,
        *,
        user_id: int,
        conversation_id: str,
        content: str | None,
        images: tuple[str, ...] = (),
        nonce: str | None = None,
        seed: ConversationSeed | None = None,
        documents: tuple[Document, ...] = (),
        overrides: RunOverrides | None = None,
        results: Mapping[str, str] | None = None,
        from_pending: bool = False,
        resume: int | None = None,
        redo: Redo | None = None,
        continues: int | None = None,
        gate: Callable[[], None] | None = None,
    ) -> ActiveRun | Dispatched:
        """Persist the user message, then start a run (here, or handed to the workers: then
        ``Dispatched``). Raises ``Busy`` while one runs.

        ``content=None`` answers the history as it stands; ``seed`` creates the conversation
        first; ``overrides`` are the run's changes to its profile; ``results`` are the client's
        tool results (call id to output) for the calls the conversation waits for; ``resume``
        is a run paused for approvals whose calls are all decided (this run applies them);
        ``redo`` makes the run a new alternative (a regenerated answer, an edited message);
        ``continues`` is the interrupted run it goes on from (announced to every tab); ``gate``
        runs first in the start's database hop, and an error it raises stores nothing.
        """
        if self.busy(conversation_id):
            raise Busy("a reply is still running in this conversation")
        self.sweeper.ensure()
        workers = self.on_workers
        self._starting.add(conversation_id)
        try:
            message = (
                Message(
                    mint_id(), "user", content, images=images or None, documents=documents or None
                )
                if content is not None
                else None
            )
            # One database hop: load everything, make the user message durable, open the run
            # (queued for the workers, when they run it).
            limits = RunLimits(
                per_user=settings.ORKESTREL.get("MAX_RUNS_PER_USER", 0), stale=self.timings.stale
            )
            prepare: Callable[..., Prepared] = (
                partial(prepare_queued, nonce=nonce) if workers else prepare_run
            )
            key = current_key()
            # A new start is held to the quotas in the same hop, before anything is stored; a
            # run going on (after approvals, or a lost worker's) is not a new start.
            quota = partial(enforce, user_id, key) if resume is None and continues is None else None
            # On PostgreSQL on one of several lanes: a burst's starts do not queue on one thread.
            warnings, prepared = await on_lane(
                _checked,
                gate,
                quota,
                prepare,
                conversation_id,
                user_id,
                message,
                self.origin,
                limits,
                seed=seed,
                overrides=overrides,
                results=results,
                from_pending=from_pending,
                resume=resume,
                redo=redo,
            )
            loaded, run_id, usage, user_payload, title, decisions = prepared
            handoff = Handoff(
                run_id=run_id,
                user_id=user_id,
                conversation_id=conversation_id,
                message=user_payload,
                nonce=nonce,
                title=title,
                overrides=overrides,
                decisions=decisions,
                continues=continues,
                key=key,
            )
            if workers:
                dispatched = await self._dispatch(handoff)
                for warning in warnings:
                    self.publish(
                        conversation_id,
                        encode(NoticeFrame(code=WARNING_CODE, message=warning.message)),
                    )
                return dispatched
            active = await self._launch(handoff, loaded, usage)
            for warning in warnings:
                active.emit(NoticeFrame, code=WARNING_CODE, message=warning.message)
        finally:
            self._starting.discard(conversation_id)
        active.task = spawn(active.drive())
        return active

    async def adopt(self, handoff: Handoff, loaded: LoadedSession) -> ActiveRun:
        """Run here a run another process opened and handed over (a worker's part: the run's
        row is claimed, ``loaded`` read in that hop). ``StartFailed`` as for ``start``."""
        self.sweeper.ensure()
        active = await self._launch(handoff, loaded, loaded.spec.usage)
        active.task = spawn(active.drive())
        return active

    async def _launch(
        self, handoff: Handoff, loaded: LoadedSession, usage: TokenUsage
    ) -> ActiveRun:
        """Build the run's live agent and hold it here; its ``started`` frame is out once
        this returns (its drive is the caller's to spawn)."""
        run_id, conversation_id = handoff.run_id, handoff.conversation_id
        try:
            session = await ChatSession.from_loaded(loaded, handoff.overrides, handoff.key)
        except Exception as error:
            # The profile cannot be built (an operator's configuration): the message is
            # stored, the run ends as an error at once instead of holding the slot.
            logger.exception("run %s could not start", run_id)
            reason = str(error) or type(error).__name__
            await in_thread(finish_run)(run_id, "error", None, reason)
            raise StartFailed(reason) from error
        session.run_id = run_id
        active = ActiveRun(self, session, run_id, conversation_id, decisions=handoff.decisions)
        active.committed = {m.id for m in session.agent.context.messages.messages()}
        active.total = usage
        session.agent.context.messages.emitter.on(
            "compact",
            lambda section: active.compacted(compaction_payload(section)),
        )
        self._runs[conversation_id] = active
        self._by_run[run_id] = active
        self._checkpoints.ensure()
        self.relay.announce(active)
        active.started(handoff.message, handoff.nonce, handoff.title)
        if handoff.continues is not None:
            _announce_continuation(active)
        return active

    async def _dispatch(self, handoff: Handoff) -> Dispatched:
        """Send the opened run to the workers; if the broker refuses, the run ends as an
        error at once (its message is stored) and ``StartFailed`` says so."""
        try:
            # The broker's client blocks: in a thread of its own, not the database thread.
            await asyncio.to_thread(publish_run, handoff)
        except Exception as error:
            logger.exception("run %s could not be sent to the workers", handoff.run_id)
            reason = "the reply could not be handed to a worker"
            await in_thread(finish_run)(handoff.run_id, "error", None, reason)
            raise StartFailed(reason) from error
        return Dispatched(handoff.run_id, handoff.conversation_id, (handoff.started(),))

    async def next_from_pending(
        self, user_id: int, conversation_id: str, waiting: bool | None = None
    ) -> ActiveRun | Dispatched | None:
        """Start the conversation's next run from its pending messages, if it has any and is
        free (here and in every other process); the run, or ``None``. ``waiting`` is whether
        messages wait, when the caller has just read it (``None``: read it here)."""
        if self.busy(conversation_id):
            return None
        if waiting is None:
            waiting = await in_thread(has_pending)(conversation_id)
        if not waiting:
            return None
        try:
            active = await self.start(
                user_id=user_id, conversation_id=conversation_id, content=None, from_pending=True
            )
        except (Busy, NothingPending):
            return None  # another start (here or elsewhere) took them, or holds the slot
        except (TooManyRuns, StartFailed, ModelUnavailable, QuotaExceeded) as refusal:
            # The messages stay pending (taken back or sent again later); every follower is
            # told why nothing answers them, in place of the run that would have.
            logger.warning(
                "pending messages of %s wait: the next run could not start", conversation_id
            )
            self.publish(conversation_id, encode(ErrorFrame.refusing(refusal)))
            return None
        # The run took them all: every tab sees the queue empty.
        self.publish(conversation_id, encode(PendingFrame(messages=[], taken=[])))
        return active

    async def resume(
        self, user_id: int, conversation_id: str, run_id: int
    ) -> ActiveRun | Dispatched | None:
        """Go on after the paused run ``run_id``, whose calls are all decided: the new run, or
        ``None`` when another start (here or elsewhere) went on already."""
        try:
            active = await self.start(
                user_id=user_id, conversation_id=conversation_id, content=None, resume=run_id
            )
        except (Busy, NotPaused):
            return None
        # Nothing waits any more, whoever decided (an operator's decision sent no frame).
        self.publish(conversation_id, encode(ApprovalFrame(approvals=[])))
        self.publish(conversation_id, encode(QuestionFrame(questions=[])))
        return active

    async def resume_ready(self) -> None:
        """Go on after every paused run whose calls are all decided (the sweep's part: an
        operator decided in the admin, an approval expired, a decider's process died)."""
        for run_id, conversation_id, owner_id in await in_thread(ready_runs)():
            try:
                await self.resume(owner_id, conversation_id, run_id)
            except Exception:  # noqa: BLE001 - one run that cannot go on must not stop the rest
                logger.warning("run %s could not go on after its approvals", run_id, exc_info=True)

    async def go_on(self) -> None:
        """The sweep's part after approvals: paused runs whose calls are all decided go on,
        and so do messages a crash left waiting (their conversation's run was closed)."""
        await self.resume_ready()
        for conversation_id, owner_id in await in_thread(stranded)():
            await self.next_from_pending(owner_id, conversation_id, waiting=True)

    async def interrupted(self, closed: list[Interrupted]) -> None:
        """Tell every follower of the runs a crash closed that they ended: each run's stored
        ``finish``, to every process. A lost worker's run goes on as a new one (here, or on
        a worker), named in that frame."""
        for run in closed:
            frame = run.frame
            if run.worker:
                found = await in_thread(takeovers)(run_id=run.run_id)
                started = await self.continue_interrupted(found[0]) if found else None
                if started is not None:
                    frame = {**frame, "continued_by": started.run_id}
            self.publish(run.conversation_id, frame)

    async def continue_interrupted(self, takeover: Takeover) -> ActiveRun | Dispatched | None:
        """Continue an interrupted run as a new one (here, or handed to a worker): it answers on
        from the history, after telling every tab what the interruption kept; the interrupted
        run's ``finish`` names it. ``None`` if it could not start (a later start took the
        conversation, or its profile cannot run)."""
        try:
            started = await self.start(
                user_id=takeover.user_id,
                conversation_id=takeover.conversation_id,
                content=None,
                continues=takeover.run_id,
            )
        except Exception:  # noqa: BLE001 - Busy and the rest: nothing to continue here
            logger.info("run %s was not continued", takeover.run_id, exc_info=True)
            return None
        await in_thread(name_continuation)(takeover.run_id, started.run_id)
        logger.info("run %s continued as run %s", takeover.run_id, started.run_id)
        return started

    def abort(self, conversation_id: str, reason: str = "stopped by user") -> bool:
        """Stop the conversation's run (its partial answer is kept); whether one was running."""
        active = self._runs.get(conversation_id)
        if active is None:
            if self.on_workers:
                # Its run is queued for the workers or on one (whether one runs is for the
                # database or the worker to know: the ``abort`` frame confirms).
                self.relay.background(self.stop_elsewhere(conversation_id, reason))
                return True
            return False
        active.session.agent.abort(reason)
        return True

    async def stop_elsewhere(
        self, conversation_id: str, reason: str = "stopped by user", run_id: int | None = None
    ) -> None:
        """Stop the conversation's run (``run_id``, when known) that the workers hold.

        Still queued with no worker's claim, it is settled here (``stop_queued``) and every
        follower sees it end as a stopped run does; otherwise the stop goes to the worker
        through the layer (``send_stop``, in the background): never both, never neither.
        """
        try:
            stop = await in_thread(stop_queued)(conversation_id, reason, run_id)
        except Exception:  # noqa: BLE001 - the worker's side of the stop still works
            logger.warning("stopping the queued run of %s failed", conversation_id, exc_info=True)
            stop = QueuedStop(run_id)
        if not stop.settled:
            self.relay.background(self.send_stop(conversation_id, reason, stop.run_id))
            return
        for frame in stop.frames:
            self.publish(conversation_id, frame)
        if stop.owner_id is not None:
            # As after any stopped run: messages sent meanwhile start the next one.
            await self.next_from_pending(stop.owner_id, conversation_id)

    async def send_stop(self, conversation_id: str, reason: str, run_id: int | None = None) -> None:
        """Send a stop to the process holding the conversation's run, through the layer.

        With ``run_id`` (a worker's run), again while it is running: a worker that has just
        claimed it listens only once its run is up, and a stop before that is not heard.
        """
        message: dict[str, Any] = {
            "type": "run.cancel",
            "conversation": conversation_id,
            "origin": self.origin,
            "reason": reason,
        }
        if run_id is not None:
            message["run"] = run_id  # never another run (the next one, from pending)
        for sent in range(1, STOP_SENDS + 1):
            try:
                await get_channel_layer().group_send(join_group(conversation_id), message)
            except Exception:  # noqa: BLE001 - the user can press stop again
                logger.warning("sending a stop to the workers failed", exc_info=True)
                return
            if run_id is None or sent == STOP_SENDS:
                return
            await asyncio.sleep(STOP_RESEND_SECONDS)
            if not await in_thread(still_running)(run_id):
                return

    async def compact(self, *, user_id: int, conversation_id: str, focus: str | None) -> Any:
        """Fold the conversation's older history now (with an optional focus): the section, or
        ``None`` when there is nothing to fold yet. ``CompactionFailed`` when the summary could
        not be made (a blank answer, a failed model call): nothing is folded."""
        if self.busy(conversation_id):
            raise Busy("a reply is still running in this conversation")
        self._starting.add(conversation_id)
        try:
            # Another process (a web process, a worker) may hold the conversation's run.
            if await in_thread(run_going)(conversation_id, self.timings.stale):
                raise Busy("a reply is still running in this conversation")
            session = await ChatSession.open(conversation_id, user_id)
            conversation = session.agent.context.messages
            if focus:
                conversation = session.conversations.add(
                    snapshot=conversation.snapshot(),
                    summarize=make_summarizer(
                        session.agent.provider,
                        focus,
                        UsageRecorder.for_spec(session.spec, current_key()),
                    ),
                )
            # A manual fold keeps only the latest exchange verbatim: the user asked for room.
            try:
                section = await conversation.compact(keep=MANUAL_KEEP)
            except CompactionFailed:
                raise
            except Exception as error:
                # The model server failed, or answered what is no summary: nothing folded.
                logger.warning("compacting %s failed", conversation_id, exc_info=True)
                reason = str(error)[:200] or type(error).__name__
                raise CompactionFailed(
                    f"Older messages could not be summarized ({reason}): nothing was folded."
                ) from error
            if section is not None:
                await session.conversations.save(conversation_id)
            return section
        finally:
            self._starting.discard(conversation_id)

    def release(self, conversation_id: str, active: ActiveRun) -> None:
        if self._by_run.pop(active.run_id, None) is active:
            self._recent[active.run_id] = active
            while len(self._recent) > RECENT_RUNS:
                del self._recent[next(iter(self._recent))]
        if self._runs.get(conversation_id) is active:
            del self._runs[conversation_id]
            self.relay.released(conversation_id)
            task = active.task
            if task is not None and not task.done():
                self._ending[conversation_id] = task
                task.add_done_callback(partial(self._ended, conversation_id))

    def _ended(self, conversation_id: str, task: asyncio.Task[None]) -> None:
        if self._ending.get(conversation_id) is task:
            del self._ending[conversation_id]

    async def store_events(self, active: ActiveRun) -> bool | None:
        """Store a settled run's frames (the end of its task, after its slot was released);
        whether messages wait for the next run (``None``: unknown, the write failed)."""
        try:
            return await in_thread(close_run)(active.run_id, active.conversation_id, active.frames)
        except Exception:  # noqa: BLE001 - replay from the database is lost, the run is not
            logger.warning("storing the frames of run %s failed", active.run_id, exc_info=True)
            return None

    async def shutdown(self) -> None:
        """Stop this manager's runs where they are (a worker's warm shutdown): their rows
        stay open, their heartbeats stop, and another worker takes them over."""
        tasks = [active.task for active in self._runs.values() if active.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def quiet(self) -> None:
        """Wait until none of this process's runs (in this event loop) is going or ending:
        the next run a pending message starts is waited for too (a test's teardown)."""
        loop = asyncio.get_running_loop()
        while True:
            tasks = [active.task for active in self._runs.values() if active.task is not None]
            tasks += self._ending.values()
            going = [task for task in tasks if not task.done() and task.get_loop() is loop]
            if not going:
                return
            await asyncio.gather(*(asyncio.shield(task) for task in going), return_exceptions=True)

    async def wait(self, conversation_id: str) -> None:
        """Wait for the conversation's run (if any) to settle and its task to end (its frames
        stored), including one released a moment ago."""
        active = self._runs.get(conversation_id)
        task = active.task if active is not None else self._ending.get(conversation_id)
        if task is not None:
            await asyncio.shield(task)


def _announce_continuation(active: ActiveRun) -> None:
    """A continued run's first words: the partial answer the interruption kept (stored by the
    sweep, which no tab heard of), and a notice saying what happened."""
    messages = active.session.agent.context.messages.messages()
    last = messages[-1] if messages else None
    if last is not None and last.role == "assistant" and last.content and not last.calls:
        active.emit(CommittedFrame, messages=committed_payload([last]))
    active.emit(
        NoticeFrame,
        code=CONTINUED,
        message="The worker writing the answer was lost; another goes on from what it had saved.",
    )


run_manager = RunManager()
