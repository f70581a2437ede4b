"""One streaming run: its agent driven to the end, its frames paced out as they come.

``ActiveRun`` composes the parts: the run's numbered frames (``frame_log``), the mapping of
its chunk stream to frames with the in-flight answer (``chunk_frames``), and what it stores
(``writes``). It owns the drive loop (``drive``: chunks in batches, text paced by ``Pacer``),
the hooks that put what the kit reports outside the stream in its place among the chunks,
and what a joining client needs to catch up (``snapshot``, ``frames_after``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, assert_never

from conversations.approvals import Decided
from orkestrel.core import AgentResult, TokenUsage
from orkestrel.core.errors import ProviderError
from orkestrel.protocol import (
    CompactionFrame,
    InputFrame,
    InputRequestPayload,
    InputSettledPayload,
    NoticeFrame,
    RunSnapshot,
    SectionPayload,
    ServerFrame,
    StartedFrame,
    WaitFrame,
    encode,
)
from orkestrel.providers.base import HttpProvider
from orkestrel.request_scope import bind_run
from orkestrel.telemetry.observer import RunTelemetry, observe

from ..runtime.session import ChatSession
from ..runtime.telemetry import chat_labels
from .chunk_frames import ChunkFrames, Commit, RunItem, TakePending
from .frame_log import FrameLog
from .inbox import Inbox
from .markers import Markers
from .meter import SessionMeter
from .pacing import Pacer
from .timings import RunTimings
from .writes import RunWrites

__all__ = ["ActiveRun", "RunHost"]

logger = logging.getLogger(__name__)


class RunHost(Protocol):
    """What a run needs of the manager that holds it."""

    timings: RunTimings

    def publish(self, conversation_id: str, frame: dict[str, Any]) -> None: ...

    async def checkpoints_done(self) -> None: ...

    def release(self, conversation_id: str, active: ActiveRun) -> None: ...

    async def store_events(self, active: ActiveRun) -> bool | None: ...

    async def next_from_pending(
        self, user_id: int, conversation_id: str, waiting: bool | None = None
    ) -> Any: ...


# Loop turns that carry a frame just published to the wire: a follower reads it, the server
# writes it to its transport, the reactor flushes the transport.
TURNS_TO_THE_WIRE = 3


async def _let_out() -> None:
    """Let the frames just published reach their sockets before the run's end-of-run work
    (its snapshot and database hop) holds the loop: the answer's last words otherwise wait
    for it, a few milliseconds (``bench/openai_compat.py``)."""
    for _ in range(TURNS_TO_THE_WIRE):
        await asyncio.sleep(0)


class ActiveRun:
    """One streaming run and what a joining client needs to catch up.

    Built in the event loop that drives it (its clock is the loop's).
    """

    def __init__(
        self,
        manager: RunHost,
        session: ChatSession,
        run_id: int,
        conversation_id: str,
        decisions: tuple[Decided, ...] = (),
    ) -> None:
        self.manager = manager
        self.session = session
        self.run_id = run_id
        self.conversation_id = conversation_id
        # The decisions on the held calls of the run this one goes on from (applied first).
        self.decisions = decisions
        self.task: asyncio.Task[None] | None = None
        # Its spans and series (``orkestrel.telemetry``); ``None`` while both are off.
        self.telemetry: RunTelemetry | None = None
        publish = partial(manager.publish, conversation_id)
        self.log = FrameLog(run_id, publish)
        self.chunks = ChunkFrames(self.log, SessionMeter(session), asyncio.get_running_loop().time)
        self.writes = RunWrites(session, run_id, conversation_id, self.chunks, publish)
        # What the kit reports outside the run's chunk stream, put in it to keep its place.
        self.markers = Markers(self.chunks)

    # -- what others read of the run ----------------------------------------------------------

    @property
    def seq(self) -> int:
        return self.log.seq

    @property
    def frames(self) -> list[dict[str, Any]]:
        """Every frame the run sent, in order (``frames[n - 1]`` has ``seq`` n)."""
        return self.log.frames

    @property
    def settled(self) -> bool:
        return self.log.settled

    @property
    def content(self) -> str:
        return self.chunks.content

    @property
    def thinking(self) -> str:
        return self.chunks.thinking

    @property
    def total(self) -> TokenUsage:
        """The conversation's usage as of the run's start, plus this run's calls."""
        return self.chunks.total

    @total.setter
    def total(self, usage: TokenUsage) -> None:
        self.chunks.total = usage

    @property
    def committed(self) -> set[str]:
        """Ids of the messages already announced as committed."""
        return self.writes.committed

    @committed.setter
    def committed(self, ids: set[str]) -> None:
        self.writes.committed = ids

    def snapshot(self) -> RunSnapshot:
        """The in-flight answer exactly as of ``seq``.

        Buffered deltas are flushed first, so the snapshot's text and its ``seq`` agree: the
        joining client takes the text from here and every frame after ``seq`` from the stream.
        """
        chunks = self.chunks
        chunks.flush()
        return {
            "id": self.run_id,
            "seq": self.log.seq,
            "content": chunks.content,
            "thinking": chunks.unclaimed_thinking,
            "tools": list(chunks.tools),
            "running": chunks.running.running(asyncio.get_running_loop().time()),
            "inputs": self.session.inputs.waiting(),
        }

    async def frames_after(
        self, seq: int, idle: float | None = None
    ) -> list[dict[str, Any]] | None:
        """The frames after ``seq`` (``FrameLog.after``: waits for the next one)."""
        return await self.log.after(seq, idle)

    def checkpoint(self) -> tuple[int, str, str] | None:
        """The in-flight text to save, or ``None`` when nothing changed since the last save."""
        return self.writes.checkpoint()

    # -- frames -------------------------------------------------------------------------------

    def emit(self, kind: Callable[..., ServerFrame], **fields: Any) -> None:
        """Number a frame of ``kind`` and hand it to the manager's ordered publisher.

        Buffered text goes out first, so frames keep the order the run produced them in.
        """
        self.chunks.emit(kind, **fields)

    def flush(self) -> None:
        """Send the buffered text and pieces of tool calls (``ChunkFrames.flush``)."""
        self.chunks.flush()

    def started(self, message: Any, nonce: str | None, title: str) -> None:
        self.emit(StartedFrame, message=message, nonce=nonce, title=title)

    def compacted(self, section: SectionPayload) -> None:
        self.emit(CompactionFrame, section=section)

    # -- what the kit reports outside the chunk stream (besides ``markers``) -----------------

    def _inputs(
        self, requests: list[InputRequestPayload], settled: InputSettledPayload | None
    ) -> None:
        self.emit(InputFrame, requests=requests, settled=settled)

    def _answered_by(self, model: str) -> None:
        # The provider's own name for the model that answered (the last turn's wins).
        self.writes.response_model = model

    def _compaction_failed(self, error: BaseException) -> None:
        """Automatic compaction failed: the run goes on with the whole history; say so."""
        logger.warning(
            "automatic compaction of conversation %s failed (run %s)",
            self.conversation_id,
            self.run_id,
            exc_info=error,
        )
        self.emit(
            NoticeFrame,
            code="compaction_failed",
            message="Older messages could not be summarized; the answer goes on with the "
            "whole history.",
        )

    def _waiting(self, seconds: float, error: ProviderError) -> None:
        """The model server refused for now and the provider retries: say so, and how long."""
        limited = error.status == 429
        self.emit(
            WaitFrame,
            seconds=round(seconds, 3),
            status=error.status,
            reason="rate limited" if limited else "the model server failed; retrying",
        )

    # -- the drive ----------------------------------------------------------------------------

    def _listen(self, inbox: Inbox) -> None:
        """Hear what the kit, the provider and the tools report outside the chunk stream."""
        session = self.session
        provider = session.agent.provider
        markers = self.markers
        if isinstance(provider, HttpProvider):
            provider.on_retry = self._waiting
            provider.on_call = markers.call_delta
            provider.on_model = self._answered_by
        session.tools.on_start = markers.executing
        session.agent.emitter.on("compact_error", self._compaction_failed)
        session.agent.emitter.on("turn", markers.turn_started)
        session.reports.on(markers.reported)
        # A server's request for the user's input reaches every follower as an ``input`` frame.
        session.inputs.attach(self.run_id, self._inputs)
        # Between turns, messages sent meanwhile join the run (read once, when it starts).
        session.agent.scheduler = inbox

    async def drive(self) -> None:
        """Run the agent to its end, publishing and committing as it goes.

        Chunks are drained in batches. Text goes out at once while the run has credit (about
        one frame per tick on average, ``timings.burst`` in a row) and its last frame left at
        least ``timings.gap`` ago; otherwise it waits for both and goes out with whatever arrived
        meanwhile. So a stream at or under the tick rate waits for nothing, a fast one costs
        one frame and one wake-up per tick, and a stream catching up after a stall is sent in
        a few frames instead of one per delta.
        """
        # Every line this run's task logs names the run (its task has a context of its own).
        bind_run(self.run_id, self.conversation_id)
        session, chunks, writes = self.session, self.chunks, self.writes
        telemetry = self.telemetry = observe(
            lambda: chat_labels(session.spec, self.run_id, lambda: writes.response_model)
        )
        if telemetry is not None:
            session.agent.observer = telemetry.hold()
            telemetry.open()
        result: AgentResult | None = None
        error: BaseException | None = None
        clock = asyncio.get_running_loop().time
        pacer = Pacer(self.manager.timings, clock())
        outcome: asyncio.Future[AgentResult] | None = None
        inbox = Inbox(session.agent.scheduler)
        self._listen(inbox)
        lifecycle = chunks.lifecycle
        try:
            if self.decisions:
                await writes.apply_decisions(self.decisions)
            stream = session.agent.stream(**session.run_options())
            outcome = stream.result
            channel = self.markers.channel = inbox.channel = stream.channel
            lifecycle.request_started(0)
            while True:
                await channel.wait()
                items = channel.take()
                if not items:
                    break
                await self._handle(items)
                if chunks.buffered:
                    delay = pacer.delay(clock())
                    if delay > 0:
                        await asyncio.sleep(delay)
                        await self._handle(channel.take())
                    pacer.sent(clock())
                    chunks.flush()
            result = await stream.result
            lifecycle.request_done()
        except Exception as caught:
            error = caught
            logger.exception("run %s failed", self.run_id)
            inbox.release()
            lifecycle.request_failed(str(caught) or type(caught).__name__)
            if outcome is not None:
                # The channel raised the run's error; take it from the task too, or asyncio
                # logs "Task exception was never retrieved" for every failed run.
                await asyncio.gather(outcome, return_exceptions=True)
        finally:
            chunks.flush()
        await _let_out()
        failed = await self._settle(result, error)
        waiting = await self.manager.store_events(self)
        if failed:
            # Seed 004: "an error leaves them pending until a later run or pendingPop()". The
            # model server may still be down: the person sends again, or takes them back.
            return
        # Messages sent while this run was busy start the next one (seed 004's ``pending``).
        await self.manager.next_from_pending(
            self.session.spec.user_id, self.conversation_id, waiting
        )

    async def _handle(self, items: Sequence[RunItem]) -> None:
        """Map each item to its frames; store what it made final before the next one."""
        take = self.chunks.take
        for item in items:
            write = take(item)
            if write is None:
                continue
            match write:
                case Commit(skills=skills):
                    await self.writes.commit()
                    self.chunks.answer_stored()
                    if skills is not None:
                        self.manager.publish(self.conversation_id, encode(skills))
                case TakePending(turned=turned):
                    await self.writes.take_pending(turned)
                case _:
                    assert_never(write)

    async def _settle(self, result: AgentResult | None, error: BaseException | None) -> bool:
        """Store the run's end and tell every follower; whether it ended as an error."""
        # The final write below must land after any checkpoint in flight, never before it.
        await self.manager.checkpoints_done()
        ended = False
        try:
            ended = await self.writes.settle(result, error, self.telemetry)
        finally:
            self.log.settle()
            self.manager.release(self.conversation_id, self)
        return result is None or not ended
