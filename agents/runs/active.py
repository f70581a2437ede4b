"""One streaming run: paced, numbered frames; commits as it goes; what a joiner needs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

from conversations.approvals import Decided, HeldCall, hold_calls
from conversations.questions import ask_questions
from conversations.writer import Thought, rewrite_messages, write_thinking
from orkestrel.core import (
    AgentResult,
    Channel,
    Message,
    ThinkChunk,
    TokenChunk,
    TokenUsage,
    ToolCall,
    ToolChunk,
    UsageChunk,
    estimate_messages,
)
from orkestrel.core.errors import ProviderError
from orkestrel.db import in_thread
from orkestrel.protocol import (
    AbortFrame,
    ApprovalFrame,
    ApprovalPayload,
    CommittedFrame,
    CompactionFrame,
    ContextPayload,
    ErrorFrame,
    ExhaustFrame,
    FinishFrame,
    InputFrame,
    InputRequestPayload,
    InputSettledPayload,
    NoticeFrame,
    PendingFrame,
    QuestionFrame,
    QuestionPayload,
    RunSnapshot,
    SectionPayload,
    ServerFrame,
    SkillsFrame,
    StartedFrame,
    ThinkFrame,
    TokenFrame,
    ToolCallFrame,
    ToolExecuteFrame,
    ToolFrame,
    ToolPayload,
    ToolProgressFrame,
    UsageFrame,
    WaitFrame,
    call_payload,
    context_payload,
    encode,
    result_payload,
    tool_payload,
    usage_payload,
)
from orkestrel.providers.base import CallDelta, HttpProvider
from orkestrel.request_scope import bind_run
from orkestrel.telemetry.observer import RunTelemetry, observe

from ..runtime.approvals import APPROVAL_STOP, Held, apply_decisions
from ..runtime.builtins.skills import NAME as SKILLS_TOOL
from ..runtime.client_tools import HANDOFF_STOP
from ..runtime.questions import QUESTION_STOP
from ..runtime.reports import ToolReport
from ..runtime.session import ChatSession
from ..runtime.telemetry import chat_labels
from ..runtime.usage import UsageRecorder
from .inbox import Inbox, Turned, append_pending
from .lifecycle import Executing, Lifecycle, RequestStarted
from .pacing import Pacer
from .payloads import committed_payload, joined, reason_text
from .progress import RunningCalls
from .records import called_model, finish_run
from .timings import RunTimings

__all__ = ["TEXT_FRAME_CHARS", "ActiveRun", "RunHost"]

logger = logging.getLogger(__name__)

# The most text one token or think frame carries: at most 4 bytes a character, 256 KiB, well
# under the 1 MiB a websocket server accepts by default (Daphne's, both ways).
TEXT_FRAME_CHARS = 65_536


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


def coalesced(deltas: list[CallDelta]) -> Iterator[tuple[int, str | None, str | None, list[str]]]:
    """Consecutive pieces of one call as one: (index, id, name, the pieces)."""
    current: tuple[int, str | None, str | None, list[str]] | None = None
    for delta in deltas:
        if current is not None and current[0] == delta.index:
            index, call_id, name, pieces = current
            current = (index, call_id or delta.id, name or delta.name, pieces)
            pieces.append(delta.arguments)
            continue
        if current is not None:
            yield current
        current = (delta.index, delta.id, delta.name, [delta.arguments])
    if current is not None:
        yield current


# Loop turns that carry a frame just published to the wire: a follower reads it, the server
# writes it to its transport, the reactor flushes the transport.
TURNS_TO_THE_WIRE = 3


async def _let_out() -> None:
    """Let the frames just published reach their sockets before the run's end-of-run work
    (its snapshot and database hop) holds the loop: the answer's last words otherwise wait
    for it, a few milliseconds (``bench/openai_compat.py``)."""
    for _ in range(TURNS_TO_THE_WIRE):
        await asyncio.sleep(0)


@dataclass
class ActiveRun:
    """One streaming run and what a joining client needs to catch up."""

    manager: RunHost
    session: ChatSession
    run_id: int
    conversation_id: str
    seq: int = 0
    # The in-flight answer and reasoning as parts, joined on demand (linear in length).
    answer: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tools: list[ToolPayload] = field(default_factory=list)
    # Ids of the messages already announced as committed.
    committed: set[str] = field(default_factory=set)
    # How many of the run's assistant messages took their reasoning: the k-th is request k's.
    _claimed: int = 0
    task: asyncio.Task[None] | None = None
    # The conversation's cumulative usage, as of the start of the run plus this run's calls.
    total: TokenUsage = field(default_factory=TokenUsage)
    # This run's own usage so far (its cost is priced from it).
    spent: TokenUsage | None = None
    _tokens: list[str] = field(default_factory=list)
    _thoughts: list[str] = field(default_factory=list)
    # Pieces of tool calls the model is writing, sent at most once a tick.
    _deltas: list[CallDelta] = field(default_factory=list)
    # The run's own chunk stream (set once it streams): markers go in it to keep their place.
    channel: Channel[Any] | None = None
    lifecycle: Lifecycle | None = None
    # What the last checkpoint saved (length of answer + reasoning), to skip unchanged runs.
    _saved: int = -1
    # Every frame the run sent, in order (``frames[n - 1]`` has ``seq`` n): followers replay
    # from here, and it is stored with the run once it settled.
    frames: list[dict[str, Any]] = field(default_factory=list)
    settled: bool = False
    # The decisions on the held calls of the run this one goes on from (applied first).
    decisions: tuple[Decided, ...] = ()
    # Set and replaced on every frame: followers wait on it for the next one.
    _more: asyncio.Event = field(default_factory=asyncio.Event)
    # The calls running now, which the tools' reports are about (``tool_progress``).
    running: RunningCalls = field(default_factory=RunningCalls)
    # The model the provider reported answering (``Run.response_model``); blank until it does.
    response_model: str = ""
    # Its spans and series (``orkestrel.telemetry``); ``None`` while both are off.
    telemetry: RunTelemetry | None = None

    @property
    def content(self) -> str:
        return joined(self.answer)

    @property
    def thinking(self) -> str:
        return joined(self.reasoning)

    @property
    def unclaimed_thinking(self) -> str:
        """The reasoning no committed message holds yet: the in-flight answer's."""
        if self.lifecycle is None:
            return self.thinking
        return self.lifecycle.thinking_from(self._claimed)

    def snapshot(self) -> RunSnapshot:
        """The in-flight answer exactly as of ``seq``.

        Buffered deltas are flushed first, so the snapshot's text and its ``seq`` agree: the
        joining client takes the text from here and every frame after ``seq`` from the stream.
        """
        self.flush()
        return {
            "id": self.run_id,
            "seq": self.seq,
            "content": self.content,
            "thinking": self.unclaimed_thinking,
            "tools": list(self.tools),
            "running": self.running.running(asyncio.get_running_loop().time()),
            "inputs": self.session.inputs.waiting(),
        }

    def emit(self, kind: Callable[..., ServerFrame], **fields: Any) -> None:
        """Number a frame of ``kind`` and hand it to the manager's ordered publisher.

        Buffered text goes out first, so frames keep the order the run produced them in.
        """
        if kind is not TokenFrame and kind is not ThinkFrame:
            self.flush()
        self._publish(kind(run=self.run_id, seq=self.seq + 1, **fields))

    def _publish(self, frame: ServerFrame) -> None:
        self.seq += 1
        data = encode(frame)
        self.frames.append(data)
        self._wake()
        self.manager.publish(self.conversation_id, data)

    def _wake(self) -> None:
        more, self._more = self._more, asyncio.Event()
        more.set()

    async def frames_after(
        self, seq: int, idle: float | None = None
    ) -> list[dict[str, Any]] | None:
        """The frames after ``seq``, waiting for the next one when there are none yet.

        Empty once the run has settled and every frame was read: the follow is over. ``None``
        when ``idle`` seconds passed with no frame (a follower's cue for a keep-alive).
        """
        while len(self.frames) <= seq and not self.settled:
            if idle is None:
                await self._more.wait()
                continue
            try:
                await asyncio.wait_for(self._more.wait(), idle)
            except TimeoutError:
                return None
        return self.frames[seq:]

    def started(self, message: Any, nonce: str | None, title: str) -> None:
        self.emit(StartedFrame, message=message, nonce=nonce, title=title)

    def compacted(self, section: SectionPayload) -> None:
        self.emit(CompactionFrame, section=section)

    def flush(self) -> None:
        """Send the coalesced token / think deltas as one frame each (or several, when the
        text is longer than ``TEXT_FRAME_CHARS``: every frame stays under a socket's limit),
        then the pieces of tool calls being written."""
        if self._thoughts:
            text = "".join(self._thoughts)
            self._thoughts.clear()
            for start in range(0, len(text), TEXT_FRAME_CHARS):
                part = text[start : start + TEXT_FRAME_CHARS]
                self._publish(ThinkFrame(run=self.run_id, seq=self.seq + 1, content=part))
        if self._tokens:
            text = "".join(self._tokens)
            self._tokens.clear()
            for start in range(0, len(text), TEXT_FRAME_CHARS):
                part = text[start : start + TEXT_FRAME_CHARS]
                self._publish(TokenFrame(run=self.run_id, seq=self.seq + 1, content=part))
        if self._deltas:
            self._flush_calls()

    def _mark(self, marker: Any) -> bool:
        """Put ``marker`` in the run's chunk stream (so it keeps its place among the chunks);
        whether it went in."""
        channel = self.channel
        if channel is None or channel.closed:
            return False
        channel.push(marker)
        return True

    def _call_delta(self, delta: CallDelta) -> None:
        """A piece of a tool call the model is writing (paced like text)."""
        if not self._mark(delta):
            self._deltas.append(delta)

    def _flush_calls(self) -> None:
        deltas, self._deltas = self._deltas, []
        for index, call_id, name, pieces in coalesced(deltas):
            text = "".join(pieces)
            # A long argument (a file's text) goes in several frames, each under the limit.
            for start in range(0, max(len(text), 1), TEXT_FRAME_CHARS):
                self._publish(
                    ToolCallFrame(
                        run=self.run_id,
                        seq=self.seq + 1,
                        index=index,
                        id=call_id,
                        name=name,
                        arguments=text[start : start + TEXT_FRAME_CHARS],
                    )
                )

    def _executing(self, calls: Sequence[ToolCall]) -> None:
        """Calls start running now: each card says so until its result comes."""
        if not self._mark(Executing(tuple(calls))):
            self._started_calls(calls)

    def _started_calls(self, calls: Sequence[ToolCall]) -> None:
        if self.lifecycle is not None:
            self.lifecycle.request_done()
        self.running.started(calls, asyncio.get_running_loop().time())
        for call in calls:
            self.emit(ToolExecuteFrame, call=call_payload(call))

    def _reported(self, report: ToolReport) -> None:
        """A tool reported on a running call: after what streamed before it, its card shows
        the report (a ``tool_progress`` frame)."""
        if not self._mark(report):
            self._progress(report)

    def _progress(self, report: ToolReport) -> None:
        call = self.running.call_of(report)
        if call is not None:
            self.running.shown(call.id, report.display)
            self.emit(ToolProgressFrame, call=call.id, display=report.display)

    def _inputs(
        self, requests: list[InputRequestPayload], settled: InputSettledPayload | None
    ) -> None:
        self.emit(InputFrame, requests=requests, settled=settled)

    def _answered_by(self, model: str) -> None:
        # The provider's own name for the model that answered (the last turn's wins).
        self.response_model = model

    def _turn_started(self, turn: int) -> None:
        # The first request's start goes out when the stream opens (before any chunk).
        if turn:
            self._mark(RequestStarted(turn))

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
        session = self.session
        telemetry = self.telemetry = observe(
            lambda: chat_labels(session.spec, self.run_id, lambda: self.response_model)
        )
        if telemetry is not None:
            session.agent.observer = telemetry.hold()
            telemetry.open()
        result: AgentResult | None = None
        error: BaseException | None = None
        clock = asyncio.get_running_loop().time
        pacer = Pacer(self.manager.timings, clock())
        outcome: asyncio.Future[AgentResult] | None = None
        provider = session.agent.provider
        if isinstance(provider, HttpProvider):
            provider.on_retry = self._waiting
            provider.on_call = self._call_delta
            provider.on_model = self._answered_by
        session.tools.on_start = self._executing
        session.agent.emitter.on("compact_error", self._compaction_failed)
        session.agent.emitter.on("turn", self._turn_started)
        session.reports.on(self._reported)
        # A server's request for the user's input reaches every follower as an ``input`` frame.
        session.inputs.attach(self.run_id, self._inputs)
        lifecycle = self.lifecycle = Lifecycle(self.emit, clock, TEXT_FRAME_CHARS)
        # Between turns, messages sent meanwhile join the run (read once, when it starts).
        inbox = session.agent.scheduler = Inbox(session.agent.scheduler)
        try:
            if self.decisions:
                await self._apply_decisions()
            stream = session.agent.stream(**session.run_options())
            outcome = stream.result
            channel = self.channel = inbox.channel = stream.channel
            lifecycle.request_started(0)
            while True:
                await channel.wait()
                chunks = channel.take()
                if not chunks:
                    break
                await self._handle(chunks)
                if self._tokens or self._thoughts or self._deltas:
                    delay = pacer.delay(clock())
                    if delay > 0:
                        await asyncio.sleep(delay)
                        await self._handle(channel.take())
                    pacer.sent(clock())
                    self.flush()
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
            self.flush()
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

    async def _apply_decisions(self) -> None:
        """Run the calls a person approved and answer the denied ones, before the model
        reads the history again; their cards update as each one ends."""
        agent = self.session.agent
        calls = {decided.call_id: decided for decided in self.decisions}
        for result in await apply_decisions(agent, self.decisions):
            decided = calls[result.id]
            call = ToolCall(decided.call_id, decided.tool, dict(decided.arguments))
            payload = tool_payload(call, result)
            self.tools.append(payload)
            self.emit(ToolFrame, **payload)
        # The results took their placeholders' places (same ids): stored in place too, or the
        # next run, which reads the history from the database, would read the placeholders.
        answered = [
            message
            for message in agent.context.messages.messages()
            if message.role == "tool" and message.tool_call_id in calls
        ]
        await self._commit(then=partial(rewrite_messages, self.conversation_id, answered))

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

    async def _handle(self, chunks: list[Any]) -> None:
        lifecycle = self.lifecycle
        assert lifecycle is not None  # set when the drive begins
        for chunk in chunks:
            kind = type(chunk)
            if kind is TokenChunk:
                lifecycle.text(chunk.content)
                self.answer.append(chunk.content)
                self._tokens.append(chunk.content)
            elif kind is ThinkChunk:
                lifecycle.thinking(chunk.content)
                self.reasoning.append(chunk.content)
                self._thoughts.append(chunk.content)
            elif kind is CallDelta:
                lifecycle.close_block()
                self._deltas.append(chunk)
            elif kind is Executing:
                self._started_calls(chunk.calls)
            elif kind is ToolChunk:
                self.running.ended(chunk.call.id)
                lifecycle.request_done()
                payload = tool_payload(chunk.call, chunk.result)
                self.tools.append(payload)
                self.emit(ToolFrame, **payload)
                # The assistant turn with its calls and this tool message are now final.
                await self._commit()
                self.answer.clear()
                self._skills_changed(chunk)
            elif kind is RequestStarted:
                lifecycle.request_started(chunk.turn)
            elif kind is ToolReport:
                self._progress(chunk)
            elif kind is Turned:
                lifecycle.close_block()
                await self._take_pending(chunk)
            elif kind is UsageChunk:
                # A request's usage comes as it ends (before its calls run).
                lifecycle.request_done(chunk.usage)
                self.total = self.total + chunk.usage
                self.spent = chunk.usage if self.spent is None else self.spent + chunk.usage
                spec = self.session.spec
                prices = UsageRecorder.for_spec(spec)
                self.emit(
                    UsageFrame,
                    usage=usage_payload(chunk.usage, prices.cost(chunk.usage)),
                    total=usage_payload(self.total, prices.cost_after(spec.cost, self.spent)),
                    context=self._context(),
                )

    def _skills_changed(self, chunk: ToolChunk) -> None:
        """The model activated skills (its ``skills`` tool): every tab shows them active."""
        value = chunk.result.value
        if chunk.call.name != SKILLS_TOOL or not isinstance(value, dict):
            return
        active = value.get("active")
        if value.get("activated") and isinstance(active, list):
            self.manager.publish(
                self.conversation_id, encode(SkillsFrame(skills=[str(name) for name in active]))
            )

    async def _take_pending(self, turned: Turned) -> None:
        """Between turns: the messages sent meanwhile join the run as one user message."""
        try:
            took = await in_thread(append_pending)(self.conversation_id, self.session.spec.user_id)
            if took is not None:
                message, payload = took
                self.session.agent.context.messages.add(message)
                self.committed.add(message.id)
                self.emit(CommittedFrame, messages=[payload])
                self.manager.publish(
                    self.conversation_id, encode(PendingFrame(messages=[], taken=[]))
                )
        except Exception:  # noqa: BLE001 - they stay pending: the next run takes them
            logger.warning(
                "pending messages of run %s could not join it", self.run_id, exc_info=True
            )
        finally:
            if not turned.done.done():
                turned.done.set_result(None)

    def _context(self) -> ContextPayload:
        """The meter: the provider's count of the latest call's prompt, else the estimate.

        ``total`` has each call's usage folded in before the meter is read, and keeps that
        call's prompt (``latest_prompt``; ``None`` until the run's first report). The same
        count is stored with the conversation's usage, so a reload reads the same.
        """
        window = self.session.spec.profile.context_window
        reported = self.total.latest_prompt
        if reported:
            return context_payload(window, reported)
        agent = self.session.agent
        estimate = estimate_messages(agent.context.build(agent.provider.format))
        return context_payload(window, estimate=estimate)

    async def _commit(
        self, usage: TokenUsage | None = None, then: Callable[[], None] | None = None
    ) -> None:
        """Persist, then announce the messages that became durable since the last commit.

        One database hop: the writes and ``then`` (a run's final row) in one transaction, then
        the ``committed`` payload (rendered off the GIL, with no lock held).
        """
        fresh = [
            m for m in self.session.agent.context.messages.messages() if m.id not in self.committed
        ]
        thoughts = self._claim(fresh)

        def write() -> None:
            # In the transaction that wrote the messages: none shows without its reasoning.
            write_thinking(self.conversation_id, thoughts)
            if then is not None:
                then()

        payload = await self.session.commit(
            usage,
            write if thoughts else then,
            (lambda: committed_payload(fresh, thoughts)) if fresh else None,
        )
        if fresh:
            self.committed.update(m.id for m in fresh)
            self.emit(CommittedFrame, messages=payload)

    def _claim(self, fresh: Sequence[Message]) -> dict[str, Thought]:
        """The reasoning each new assistant message keeps, by message id: the run's k-th
        assistant message is its k-th model request's answer."""
        lifecycle = self.lifecycle
        thoughts: dict[str, Thought] = {}
        if lifecycle is None:
            return thoughts
        for message in fresh:
            if message.role != "assistant":
                continue
            thought = lifecycle.take(self._claimed)
            self._claimed += 1
            if thought is not None:
                thoughts[message.id] = thought
        return thoughts

    def checkpoint(self) -> tuple[int, str, str] | None:
        """The in-flight text to save (the answer and reasoning no committed message holds
        yet), or ``None`` when nothing changed since the last save."""
        content, thinking = self.content, self.unclaimed_thinking
        size = len(content) + len(thinking)
        if size == self._saved:
            return None
        self._saved = size
        return self.run_id, content, thinking

    async def _fail_settling(self) -> None:
        """Settling failed (the database, a payload): the run still ends, and says so."""
        try:
            await in_thread(finish_run)(
                self.run_id,
                "error",
                None,
                "the reply could not be saved",
                partial=(self.content, self.thinking),
            )
        except Exception:
            logger.exception("marking run %s failed", self.run_id)
        self.emit(ErrorFrame, code="run_failed", message="the reply could not be saved")

    def _held_call(self, held: Held) -> HeldCall:
        rule = held.rule
        return HeldCall(
            call_id=held.call.id,
            tool=held.call.name,
            arguments=held.call.arguments,
            parameters=held.parameters,
            rule_id=rule.pk,
            rule_label=f"#{rule.position} {rule.tool_glob} → ask",
            zone=rule.zone,
            approver=rule.approver,
        )

    async def _settle(self, result: AgentResult | None, error: BaseException | None) -> bool:
        """Store the run's end and tell every follower; whether it ended as an error."""
        # The final write below must land after any checkpoint in flight, never before it.
        await self.manager.checkpoints_done()
        ended = False
        try:
            if result is not None:
                done = result
                handoff, gate = self.session.handoff, self.session.gate
                status = "done" if not done.partial else "partial"
                held: list[HeldCall] = []
                bridge = self.session.questions
                asked = list(bridge.asked.values()) if bridge is not None else []
                if done.stop == "abort" and (asked or (gate is not None and gate.paused)):
                    # Paused for a person's decisions (or answers): it goes on once they are
                    # all in.
                    done = replace(done, partial=False, reason=None)
                    status = stop = QUESTION_STOP if asked else APPROVAL_STOP
                    if gate is not None:
                        held = [self._held_call(item) for item in gate.held.values()]
                elif done.stop == "abort" and handoff is not None and handoff.stopped:
                    # Stopped for the client's tools: the run did what it could, it is done.
                    done = replace(done, partial=False, reason=None)
                    stop = HANDOFF_STOP
                else:
                    stop = done.stop
                approvals: list[ApprovalPayload] = []
                questions: list[QuestionPayload] = []

                if self.telemetry is not None:
                    if held:
                        self.telemetry.approval_wait([(item.call_id, item.tool) for item in held])
                    self.telemetry.finish(status, stop)

                def settle() -> None:
                    finish_run(
                        self.run_id, status, done, "", stop, response_model=self.response_model
                    )
                    if held:
                        approvals.extend(
                            hold_calls(
                                self.run_id,
                                self.conversation_id,
                                held,
                                self.session.approval_timeout,
                            )
                        )
                    if asked and stop == QUESTION_STOP:
                        questions.extend(ask_questions(self.run_id, self.conversation_id, asked))

                await self._commit(done.usage, settle)
                if approvals:
                    self.manager.publish(
                        self.conversation_id, encode(ApprovalFrame(approvals=approvals))
                    )
                if questions:
                    self.manager.publish(
                        self.conversation_id, encode(QuestionFrame(questions=questions))
                    )
                if stop == "abort":
                    self.emit(AbortFrame, reason=reason_text(done.reason))
                elif stop == "exhaust":
                    self.emit(ExhaustFrame, limit=self.session.agent.limit)
                payload = result_payload(done)
                payload["stop"] = stop
                # Which model answered, shown with the answer (``AnsweredPayload``).
                payload["model"] = called_model(self.session.spec)
                payload["response_model"] = self.response_model
                if done.usage is not None:
                    # The answer's cost, shown with it.
                    cost = UsageRecorder.for_spec(self.session.spec).cost(done.usage)
                    payload["usage"] = usage_payload(done.usage, cost)
                self.emit(FinishFrame, result=payload, context=self._context())
            else:
                message = str(error) or type(error).__name__
                if self.telemetry is not None:
                    self.telemetry.finish("error", "error", error)
                partial = (self.content, self.thinking)
                if self.content:
                    # What streamed before the failure stays in the transcript.
                    self.session.agent.context.messages.add(
                        {"role": "assistant", "content": self.content}
                    )

                def failed() -> None:
                    finish_run(
                        self.run_id,
                        "error",
                        None,
                        message,
                        partial=partial,
                        response_model=self.response_model,
                    )
                    self.session.record_failure()

                await self._commit(then=failed)
                self.emit(ErrorFrame, code="run_failed", message=message[:500])
            ended = True
        except Exception:
            logger.exception("settling run %s failed", self.run_id)
        finally:
            if not ended:
                await self._fail_settling()
            self.settled = True
            self._wake()
            self.manager.release(self.conversation_id, self)
        return result is None or not ended
