"""The run service: what every front door does with runs (start, follow, cancel, wait, status).

The websocket consumer, the REST API and the OpenAI-compatible endpoints call this and nothing
below it. A front door authenticates and validates; the service owns the runs (through the
run manager) and speaks only the protocol's frames.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, assert_never

from channels.layers import get_channel_layer

from conversations.approvals import Decision, decide, pending_approvals
from conversations.branches import (
    BranchBusy,
    Redo,
    conversation_branches,
    retry_point,
    select_branch,
)
from conversations.pending import queue_pending
from conversations.taking_back import Taken, pop_pending
from orkestrel.core.documents import Document
from orkestrel.db import in_thread, on_lane
from orkestrel.protocol import (
    ApprovalFrame,
    ApprovalPayload,
    BranchesFrame,
    BranchPayload,
    CompactionFrame,
    MessagePayload,
    NoticeFrame,
    PendingFrame,
    PendingPayload,
    SectionPayload,
    SkillsFrame,
    encode,
)

from ..runtime.arguments import check_arguments
from ..runtime.overrides import RunOverrides
from ..runtime.skills import Activation, activate_skills
from ..runtime.spec import ModelUnavailable
from ..runtime.summarizer import CompactionFailed
from .active import ActiveRun
from .commands import Command, Compact, Continue, LoadSkill, Say
from .errors import Busy, NothingPending
from .follow import follow_remote
from .groups import is_shared, join_group
from .interruptions import replayed
from .manager import RunManager, run_manager
from .payloads import compaction_payload
from .records import (
    ConversationSeed,
    RunRecord,
    owned_run,
    refuse_when_idle,
    retryable,
    run_conversation,
    run_going,
    stored_events,
)
from .sequence import Awaited, Position, follow_runs, slot_run
from .submissions import AfterPending, Declined, Repeat, read_plain, read_submission

__all__ = [
    "TERMINAL",
    "ApprovalDecided",
    "Compacted",
    "Queued",
    "RunHandle",
    "RunService",
    "run_service",
]

# The frame types that end a run's stream (an ``error`` ends it only when it carries the run).
TERMINAL = frozenset({"finish", "error"})
# How often a follower of a run in another process looks whether it has settled.
POLL_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class RunHandle:
    """A started run: its id, its conversation, and the user message it stored."""

    id: int
    conversation_id: str
    message: MessagePayload | None


@dataclass(frozen=True, slots=True)
class Queued:
    """A message sent while a run was busy: stored as pending (``pending``: every message
    waiting, this one last); ``awaited`` says where its answer is to be looked for."""

    pending: list[PendingPayload]
    awaited: Awaited | None = None

    @property
    def run(self) -> int | None:
        """The run going when it was queued: it takes the message at its next model request,
        or the run after it does (``None``: none was going; the next to start takes it)."""
        return self.awaited.run if self.awaited is not None else None


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """A decided approval, and the run that goes on after it (``None``: other calls of its
    run still wait, or another decider's process continued it)."""

    approval: ApprovalPayload
    continued_by: int | None


@dataclass(frozen=True, slots=True)
class Compacted:
    """A ``/compact`` was done: the folded section (``None``: nothing to fold yet)."""

    section: SectionPayload | None


class RunService:
    """Start, follow, cancel and wait for runs, whichever front door asks."""

    def __init__(self, manager: RunManager = run_manager) -> None:
        self.manager = manager

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
        redo: Redo | None = None,
        gate: Callable[[], None] | None = None,
    ) -> RunHandle:
        """Store the user message durably, then start its run (``Busy`` while one runs).

        ``content=None`` answers the history as it stands; ``seed`` creates the conversation
        with the run (a request that brings its history); ``overrides`` change the profile for
        this run (``ToolClash`` when a client tool has a profile tool's name); ``results``
        fill in the client tool calls the conversation waits for (``UnknownToolCall``);
        ``redo`` makes the run a new alternative (``regenerate``, ``edit``).
        """
        active = await self.manager.start(
            user_id=user_id,
            conversation_id=conversation_id,
            content=content,
            images=images,
            documents=documents,
            nonce=nonce,
            seed=seed,
            overrides=overrides,
            results=results,
            redo=redo,
            gate=gate,
        )
        message: MessagePayload | None = active.frames[0]["message"]
        return RunHandle(active.run_id, conversation_id, message)

    async def send(
        self,
        *,
        user_id: int,
        conversation_id: str,
        content: str,
        images: tuple[str, ...] = (),
        nonce: str | None = None,
        documents: tuple[Document, ...] = (),
        read: Command | Repeat | AfterPending | None = None,
    ) -> RunHandle | Queued | Compacted | Activation | Repeat:
        """What a person submits: a message (trimmed, a prompt template expanded), or a slash
        command (``commands``) done just before its run; ``NothingToContinue`` for
        ``/continue`` (or a blank message) on an empty conversation, ``UnknownSkill`` for a
        ``/skill`` not offered. A message sent while a run is busy is queued as pending
        (``Queued``): the next run takes it; one sent (or a continue) while messages a failed
        run left still wait goes after them, and its run takes them all. An identical
        submission right after the previous one is ignored (``Repeat``: nothing stored,
        nothing run). ``read`` is what ``read_submission`` made of it, where the caller read it
        in a database hop of its own (a REST view), sparing the start a hop."""
        if read is None and not self.manager.busy(conversation_id):
            # The common case, a plain message to an idle conversation, is read and started
            # in one database hop; anything else (a repeat, a command, messages waiting)
            # stores nothing there, and what it is decides below.
            plain = partial(read_plain, user_id, conversation_id, content, images, documents)
            try:
                return await self._say(
                    user_id, conversation_id, content, images, documents, nonce, gate=plain
                )
            except Declined as declined:
                read = declined.read
        if read is None:
            read = await on_lane(
                read_submission, user_id, conversation_id, content, images, documents
            )
        match read:
            case Repeat() as repeat:
                return repeat
            case AfterPending(content=text):
                # Messages wait (behind a run, or left by a failed one): this one goes after
                # them, and the next run takes them all, in the order they were sent.
                if text is not None:
                    if not self.manager.busy(conversation_id):
                        # None going here: one going elsewhere may still take it, else a
                        # start's refusal (an unavailable model) answers now, nothing stored.
                        await in_thread(refuse_when_idle)(
                            user_id=user_id,
                            conversation_id=conversation_id,
                            stale=self.manager.timings.stale,
                        )
                    return await self._queue(
                        user_id, conversation_id, text, images, nonce, documents
                    )
                return await self._continue_pending(user_id, conversation_id, nonce)
            case Say(content=text):
                return await self._say(user_id, conversation_id, text, images, documents, nonce)
            case Continue():
                return await self.start(
                    user_id=user_id, conversation_id=conversation_id, content=None, nonce=nonce
                )
            case Compact(focus=focus):
                return Compacted(
                    await self.compact(
                        user_id=user_id, conversation_id=conversation_id, focus=focus
                    )
                )
            case LoadSkill(name=name):
                activation = await in_thread(activate_skills)(user_id, conversation_id, [name])
                # Every tab hears of it; the next run carries the skill's instruction.
                self.manager.publish(
                    conversation_id,
                    encode(NoticeFrame(code=activation.code, message=activation.message)),
                )
                if activation.added:
                    self.manager.publish(
                        conversation_id, encode(SkillsFrame(skills=list(activation.active)))
                    )
                return activation
            case unknown:
                assert_never(unknown)

    async def _say(
        self,
        user_id: int,
        conversation_id: str,
        text: str,
        images: tuple[str, ...],
        documents: tuple[Document, ...],
        nonce: str | None,
        gate: Callable[[], None] | None = None,
    ) -> RunHandle | Queued:
        """``text``'s run, or, while one runs, ``text`` queued for the next."""
        try:
            return await self.start(
                user_id=user_id,
                conversation_id=conversation_id,
                content=text,
                images=images,
                documents=documents,
                nonce=nonce,
                gate=gate,
            )
        except Busy:
            return await self._queue(user_id, conversation_id, text, images, nonce, documents)
        except ModelUnavailable:
            # A run going in another process may still finish: the message waits for it
            # (refused at the next start, to every follower); none going, refused.
            if not await in_thread(run_going)(conversation_id, self.manager.timings.stale):
                raise
            return await self._queue(user_id, conversation_id, text, images, nonce, documents)

    async def _queue(
        self,
        user_id: int,
        conversation_id: str,
        content: str,
        images: tuple[str, ...],
        nonce: str | None,
        documents: tuple[Document, ...] = (),
    ) -> Queued | RunHandle:
        pending = await in_thread(queue_pending)(
            user_id, conversation_id, content, images, nonce, documents
        )
        # Read before anything else awaits: the frames the going run has sent so far, so that
        # a take after them is known to have taken this message (``sequence``).
        going = self.manager.active(conversation_id)
        after = len(going.frames) if going is not None else None
        self.manager.publish(conversation_id, encode(PendingFrame(messages=pending, taken=[])))
        # No run may be going (it ended meanwhile, or failed): then this starts the next one.
        started = await self.manager.next_from_pending(user_id, conversation_id)
        if started is not None:
            return RunHandle(started.run_id, conversation_id, started.frames[0]["message"])
        return Queued(pending, await self._awaited(conversation_id, pending, going, after))

    async def _awaited(
        self,
        conversation_id: str,
        pending: list[PendingPayload],
        going: ActiveRun | None,
        after: int | None,
    ) -> Awaited | None:
        """Where the answer to the message just queued (the newest pending) is to be looked
        for: the run going here, else the one holding the slot (elsewhere, or paused)."""
        if not pending:
            return None
        message = max(item["id"] for item in pending)
        if going is not None:
            return Awaited(message, going.run_id, after)
        holder, latest = await in_thread(slot_run)(conversation_id)
        held = self.manager.run(holder) if holder is not None else None
        # A paused run's frames are all out; one held elsewhere is read from its start.
        return Awaited(message, holder, len(held.frames) if held else None, floor=latest)

    async def _continue_pending(
        self, user_id: int, conversation_id: str, nonce: str | None
    ) -> RunHandle:
        """A continue while messages wait: the run takes them (``Busy`` while one runs)."""
        try:
            active = await self.manager.start(
                user_id=user_id,
                conversation_id=conversation_id,
                content=None,
                nonce=nonce,
                from_pending=True,
            )
        except NothingPending:
            # Another start took them meanwhile: continue on the history as it stands.
            return await self.start(
                user_id=user_id, conversation_id=conversation_id, content=None, nonce=nonce
            )
        self.manager.publish(conversation_id, encode(PendingFrame(messages=[], taken=[])))
        return RunHandle(active.run_id, conversation_id, active.frames[0]["message"])

    async def decide(
        self,
        *,
        user_id: int,
        username: str,
        approval_id: int,
        decision: Decision,
    ) -> ApprovalPayload:
        """Decide a held tool call of the user's; once its run's calls are all decided, the
        run goes on. Every tab sees the decision. ``LookupError`` for another user's (or no)
        approval, ``ApprovalRefused`` for one decided already, needing an operator, or
        edited arguments that do not fit the tool's schema."""
        decided = await self.decide_run(
            user_id=user_id, username=username, approval_id=approval_id, decision=decision
        )
        return decided.approval

    async def decide_run(
        self,
        *,
        user_id: int,
        username: str,
        approval_id: int,
        decision: Decision,
    ) -> ApprovalDecided:
        """``decide``, answering also the run that goes on after the decision."""
        outcome = await in_thread(decide)(
            approval_id, decision, user_id=user_id, username=username, check=check_arguments
        )
        await self.announce_approvals(outcome.conversation_id, decided=outcome.approval)
        continued: int | None = None
        if outcome.ready:
            self.manager.sweeper.ensure()
            resumed = await self.manager.resume(
                outcome.owner_id, outcome.conversation_id, outcome.run_id
            )
            continued = resumed.run_id if resumed is not None else None
        return ApprovalDecided(outcome.approval, continued)

    async def announce_approvals(
        self, conversation_id: str, decided: ApprovalPayload | None = None
    ) -> None:
        """Tell every tab of the conversation which of its calls still wait."""
        waiting = await in_thread(pending_approvals)(conversation_id)
        self.manager.publish(
            conversation_id, encode(ApprovalFrame(approvals=waiting, decided=decided))
        )

    async def pop_pending(self, *, user_id: int, conversation_id: str) -> Taken:
        """Take the pending messages back (seed 004's ``pendingPop``): their texts, oldest
        first, and their images, waiting again as attachments a next send names; every tab
        sees the queue empty."""
        taken = await in_thread(pop_pending)(user_id, conversation_id)
        self.manager.publish(conversation_id, encode(PendingFrame(messages=[], taken=[])))
        return taken

    async def retry(self, *, user_id: int, record: RunRecord) -> RunHandle:
        """Answer again after a failed, stopped or interrupted run (the latest of its
        conversation): a new run on the history as it stands, the partial answer included.
        A failed run's turn branches: the failed attempt stays reachable as the alternative
        before the new answer. ``ValueError`` says why a run cannot be retried; ``Busy``
        while one runs."""
        refusal = await in_thread(retryable)(record)
        if refusal is not None:
            raise ValueError(refusal)
        point = await in_thread(retry_point)(record.conversation_id)
        if record.status != "error" or point is None:
            return await self.start(
                user_id=user_id, conversation_id=record.conversation_id, content=None
            )
        return await self._redo(
            user_id, record.conversation_id, Redo("regenerate", point, failed=record.id), None
        )

    async def regenerate(self, *, user_id: int, conversation_id: str, message: str) -> RunHandle:
        """Answer the turn of ``message`` (its user message, or one of its answer's) again: a
        new alternative, chosen; the earlier answer stays stored and reachable. ``Busy``
        while a run is going; ``NoSuchBranch`` (not a live message of the chosen branch),
        ``NotBranchable`` refuse it."""
        return await self._redo(user_id, conversation_id, Redo("regenerate", message), None)

    async def edit(
        self, *, user_id: int, conversation_id: str, message: str, content: str
    ) -> RunHandle:
        """Send the user message ``message`` again as ``content`` (trimmed; ``ValueError`` when
        empty): a new alternative from it, with a new answer; the old message and what
        followed it stay reachable. Refusals as ``regenerate``'s."""
        text = content.strip()
        if not text:
            raise ValueError("an edited message needs content")
        return await self._redo(user_id, conversation_id, Redo("edit", message), text)

    async def _redo(
        self, user_id: int, conversation_id: str, redo: Redo, content: str | None
    ) -> RunHandle:
        handle = await self.start(
            user_id=user_id, conversation_id=conversation_id, content=content, redo=redo
        )
        await self._announce_branches(conversation_id)
        return handle

    async def select_branch(
        self, *, user_id: int, conversation_id: str, point: str, index: int
    ) -> list[BranchPayload]:
        """Choose alternative ``index`` at the branch point ``point`` of one of the user's
        conversations, durably; every tab hears of it. The branch points now; ``Busy`` while
        a run is going, ``NoSuchBranch`` for another user's conversation or an unknown point
        or alternative."""
        if self.manager.busy(conversation_id):
            raise Busy("a reply is still running in this conversation")
        try:
            await in_thread(select_branch)(conversation_id, point, index, owner=user_id)
        except BranchBusy as error:
            raise Busy(str(error)) from None
        return await self._announce_branches(conversation_id)

    async def _announce_branches(self, conversation_id: str) -> list[BranchPayload]:
        branches = await in_thread(conversation_branches)(conversation_id)
        self.manager.publish(conversation_id, encode(BranchesFrame(branches=branches)))
        return branches

    async def get(self, *, user_id: int, run_id: int) -> RunRecord:
        """The user's run ``run_id`` as stored (``LookupError`` if absent or someone else's)."""
        self.manager.sweeper.ensure()
        record = await in_thread(owned_run)(user_id, run_id)
        if record is None:
            raise LookupError(f"no run {run_id!r}")
        return record

    async def follow_batches(
        self, run_id: int, *, after: int = 0, idle: float
    ) -> AsyncIterator[list[dict[str, Any]] | None]:
        """``follow`` in batches: every frame that is ready at once, and ``None`` after
        ``idle`` seconds without one (a stream's cue to send a keep-alive)."""
        active = self.manager.run(run_id)
        if active is None:
            async for frame in self.follow(run_id, after=after):
                yield [frame]
            return
        self.manager.sweeper.ensure()
        seq = after
        while True:
            frames = await active.frames_after(seq, idle)
            if frames is None:
                yield None
                continue
            if not frames:
                return
            seq += len(frames)
            yield frames

    def follow_conversation(
        self, conversation_id: str, *, after: Position | None = None, idle: float
    ) -> AsyncIterator[list[dict[str, Any]] | None]:
        """The conversation's runs' frames, in order, in batches (``None``: ``idle`` seconds
        without one), from after ``after`` or from the run going now; it never ends (the
        follower stops reading). ``after`` must be a run of the conversation."""
        return follow_runs(self, conversation_id, after, idle=idle)

    def follow_answer(
        self, conversation_id: str, awaited: Awaited, *, idle: float
    ) -> AsyncIterator[list[dict[str, Any]] | None]:
        """The frames from a queued message's send to the end of the run that took it (the
        going run's after then, and every run after it up to that one)."""
        return follow_runs(self, conversation_id, None, idle=idle, awaited=awaited)

    async def follow(self, run_id: int, *, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The run's frames after sequence number ``after``: replayed, then live, to its end.

        Nothing is repeated or skipped: frame ``n`` has ``seq`` n. A run this process does
        not hold (settled long ago, or running in another process) is replayed from the
        database once it has settled.
        """
        self.manager.sweeper.ensure()
        active = self.manager.run(run_id)
        if active is not None:
            seq = after
            while frames := await active.frames_after(seq):
                for frame in frames:
                    yield frame
                seq += len(frames)
            return
        layer = get_channel_layer()
        if is_shared(layer) and await in_thread(stored_events)(run_id) is None:
            # Running, in another process: follow it live through the layer.
            conversation_id = await in_thread(run_conversation)(run_id)

            async def settled() -> bool:
                return await in_thread(stored_events)(run_id) is not None

            async for frame in follow_remote(
                self.manager.relay,
                run_id=run_id,
                conversation_id=conversation_id,
                after=after,
                settled=settled,
            ):
                after = frame["seq"]
                yield frame
                if frame["type"] in TERMINAL:
                    return
        while True:
            events = await in_thread(stored_events)(run_id)
            if events is not None:
                for frame in replayed(events, after):
                    yield frame
                return
            await asyncio.sleep(POLL_SECONDS)

    async def frames(self, run_id: int) -> list[dict[str, Any]] | None:
        """The run's frames so far: live when this process holds it, else as stored once it
        settled (``None``: running elsewhere, or it ended without storing them)."""
        active = self.manager.run(run_id)
        if active is not None:
            return list(active.frames)
        return await in_thread(stored_events)(run_id)

    async def compact(
        self, *, user_id: int, conversation_id: str, focus: str | None = None
    ) -> SectionPayload | None:
        """Fold the conversation's older history now; every follower sees the ``compaction``.

        ``None`` when there is nothing to fold yet; ``Busy`` while a run is going;
        ``CompactionFailed`` when no summary could be made (nothing folded: every follower
        gets the ``compaction_failed`` notice, as for an automatic fold).
        """
        try:
            section = await self.manager.compact(
                user_id=user_id, conversation_id=conversation_id, focus=focus
            )
        except CompactionFailed as error:
            self.manager.publish(
                conversation_id,
                encode(NoticeFrame(code=CompactionFailed.code, message=str(error))),
            )
            raise
        if section is None:
            return None
        payload = compaction_payload(section)
        self.manager.publish(
            conversation_id, encode(CompactionFrame(run=None, seq=None, section=payload))
        )
        return payload

    def cancel(self, conversation_id: str, reason: str = "stopped by user") -> bool:
        """Stop the conversation's run in this process (its partial answer is kept)."""
        return self.manager.abort(conversation_id, reason)

    async def cancel_run(self, record: RunRecord, reason: str = "stopped by user") -> bool:
        """Stop the run of ``record``, in this process or (through the layer) in another.

        Whether a stop was sent; the run's ``abort`` and ``finish`` frames confirm it.
        """
        active = self.manager.run(record.id)
        if active is not None:
            return not active.settled and self.cancel(record.conversation_id, reason)
        layer = get_channel_layer()
        if record.status not in ("queued", "running") or not is_shared(layer):
            return False
        if self.manager.on_workers:
            # Settled here while no worker has claimed it, else sent to its worker.
            await self.manager.stop_elsewhere(record.conversation_id, reason, record.id)
            return True
        await layer.group_send(
            join_group(record.conversation_id),
            {
                "type": "run.cancel",
                "conversation": record.conversation_id,
                "origin": self.manager.origin,
                "run": record.id,
                "reason": reason,
            },
        )
        return True

    async def wait(self, run_id: int) -> None:
        """Wait until the run has settled (its frames are stored once this returns)."""
        async for _ in self.follow(run_id, after=10**12):
            pass
        active = self.manager.run(run_id)
        if active is not None and active.task is not None:
            await asyncio.shield(active.task)


run_service = RunService()
