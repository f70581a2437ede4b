"""What a run stores, and when: its messages as they become final, its checkpoints, its end.

Each write is one database hop. A tool's result makes the turn before it final (``commit``:
the messages, with the reasoning each answer keeps, then their ``committed`` frame); between
turns the messages sent meanwhile join the run (``take_pending``); a run going on after a
person's decisions first stores the decided calls' results (``apply_decisions``); every
checkpoint saves the in-flight text (``checkpoint``); and the end stores the run's row, with
the calls and questions that wait for a person, before its last frame goes out (``settle``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from conversations.approvals import Decided, HeldCall, hold_calls
from conversations.questions import Asked, ask_questions
from conversations.writer import rewrite_messages, write_thinking
from orkestrel.core import AgentResult, TokenUsage, ToolCall
from orkestrel.db import in_thread
from orkestrel.protocol import (
    AbortFrame,
    ApprovalFrame,
    ApprovalPayload,
    CommittedFrame,
    ErrorFrame,
    ExhaustFrame,
    FinishFrame,
    PendingFrame,
    QuestionFrame,
    QuestionPayload,
    encode,
    result_payload,
    usage_payload,
)
from orkestrel.telemetry.observer import RunTelemetry

from ..runtime.approvals import APPROVAL_STOP, Held, apply_decisions
from ..runtime.client_tools import HANDOFF_STOP
from ..runtime.questions import QUESTION_STOP
from ..runtime.session import ChatSession
from .chunk_frames import ChunkFrames
from .frame_log import Deliver
from .inbox import Turned, append_pending
from .payloads import committed_payload, reason_text
from .records import called_model, finish_run

__all__ = ["Ending", "RunWrites", "held_call"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ending:
    """How a run that returned ended: its result as stored, its status and stop reason, and
    what waits for a person (calls held for approval, questions asked)."""

    result: AgentResult
    status: str
    stop: str
    held: tuple[HeldCall, ...] = ()
    asked: tuple[Asked, ...] = ()


def held_call(held: Held) -> HeldCall:
    """A call held for approval, as it is stored."""
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


class RunWrites:
    """The writes of one run; its frames go out through ``chunks`` (numbered) and ``publish``
    (to every tab, unnumbered)."""

    def __init__(
        self,
        session: ChatSession,
        run_id: int,
        conversation_id: str,
        chunks: ChunkFrames,
        publish: Deliver,
    ) -> None:
        self.session = session
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.chunks = chunks
        self.publish = publish
        # Ids of the messages already announced as committed.
        self.committed: set[str] = set()
        # The model the provider reported answering (``Run.response_model``); blank until it does.
        self.response_model = ""
        # What the last checkpoint saved (length of answer + reasoning), to skip unchanged runs.
        self._saved = -1

    async def commit(
        self, usage: TokenUsage | None = None, then: Callable[[], None] | None = None
    ) -> None:
        """Persist, then announce the messages that became durable since the last commit.

        One database hop: the writes and ``then`` (a run's final row) in one transaction, then
        the ``committed`` payload (rendered off the GIL, with no lock held).
        """
        fresh = [
            m for m in self.session.agent.context.messages.messages() if m.id not in self.committed
        ]
        thoughts = self.chunks.claim(fresh)

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
            self.chunks.emit(CommittedFrame, messages=payload)

    async def take_pending(self, turned: Turned) -> None:
        """Between turns: the messages sent meanwhile join the run as one user message."""
        try:
            took = await in_thread(append_pending)(self.conversation_id, self.session.spec.user_id)
            if took is not None:
                message, payload = took
                self.session.agent.context.messages.add(message)
                self.committed.add(message.id)
                self.chunks.emit(CommittedFrame, messages=[payload])
                self.publish(encode(PendingFrame(messages=[], taken=[])))
        except Exception:  # noqa: BLE001 - they stay pending: the next run takes them
            logger.warning(
                "pending messages of run %s could not join it", self.run_id, exc_info=True
            )
        finally:
            if not turned.done.done():
                turned.done.set_result(None)

    async def apply_decisions(self, decisions: Sequence[Decided]) -> None:
        """Run the calls a person approved and answer the denied ones, before the model
        reads the history again; their cards update as each one ends."""
        agent = self.session.agent
        calls = {decided.call_id: decided for decided in decisions}
        for result in await apply_decisions(agent, decisions):
            decided = calls[result.id]
            self.chunks.tool_ended(
                ToolCall(decided.call_id, decided.tool, dict(decided.arguments)), result
            )
        # The results took their placeholders' places (same ids): stored in place too, or the
        # next run, which reads the history from the database, would read the placeholders.
        answered = [
            message
            for message in agent.context.messages.messages()
            if message.role == "tool" and message.tool_call_id in calls
        ]
        await self.commit(then=partial(rewrite_messages, self.conversation_id, answered))

    def checkpoint(self) -> tuple[int, str, str] | None:
        """The in-flight text to save (the answer and reasoning no committed message holds
        yet), or ``None`` when nothing changed since the last save."""
        content, thinking = self.chunks.content, self.chunks.unclaimed_thinking
        size = len(content) + len(thinking)
        if size == self._saved:
            return None
        self._saved = size
        return self.run_id, content, thinking

    async def settle(
        self,
        result: AgentResult | None,
        error: BaseException | None,
        telemetry: RunTelemetry | None,
    ) -> bool:
        """Store the run's end and tell every follower; whether that worked (if not, the run
        is marked failed, and says so)."""
        ended = False
        try:
            if result is not None:
                await self._finished(self.ending(result), telemetry)
            else:
                await self._failed(error, telemetry)
            ended = True
        except Exception:
            logger.exception("settling run %s failed", self.run_id)
        finally:
            if not ended:
                await self._fail_settling()
        return ended

    def ending(self, result: AgentResult) -> Ending:
        """How the run ended, from its result and what waits for a person."""
        session = self.session
        handoff, gate, bridge = session.handoff, session.gate, session.questions
        status = "done" if not result.partial else "partial"
        asked = tuple(bridge.asked.values()) if bridge is not None else ()
        if result.stop == "abort" and (asked or (gate is not None and gate.paused)):
            # Paused for a person's decisions (or answers): it goes on once they are all in.
            stop = QUESTION_STOP if asked else APPROVAL_STOP
            held = tuple(held_call(item) for item in gate.held.values()) if gate is not None else ()
            return Ending(replace(result, partial=False, reason=None), stop, stop, held, asked)
        if result.stop == "abort" and handoff is not None and handoff.stopped:
            # Stopped for the client's tools: the run did what it could, it is done.
            done = replace(result, partial=False, reason=None)
            return Ending(done, status, HANDOFF_STOP, asked=asked)
        return Ending(result, status, result.stop, asked=asked)

    async def _finished(self, ending: Ending, telemetry: RunTelemetry | None) -> None:
        done, status, stop = ending.result, ending.status, ending.stop
        held, asked = ending.held, ending.asked
        if telemetry is not None:
            if held:
                telemetry.approval_wait([(item.call_id, item.tool) for item in held])
            telemetry.finish(status, stop)
        approvals: list[ApprovalPayload] = []
        questions: list[QuestionPayload] = []

        def settle() -> None:
            finish_run(self.run_id, status, done, "", stop, response_model=self.response_model)
            if held:
                approvals.extend(
                    hold_calls(
                        self.run_id, self.conversation_id, held, self.session.approval_timeout
                    )
                )
            if asked and stop == QUESTION_STOP:
                questions.extend(ask_questions(self.run_id, self.conversation_id, asked))

        await self.commit(done.usage, settle)
        if approvals:
            self.publish(encode(ApprovalFrame(approvals=approvals)))
        if questions:
            self.publish(encode(QuestionFrame(questions=questions)))
        chunks = self.chunks
        if stop == "abort":
            chunks.emit(AbortFrame, reason=reason_text(done.reason))
        elif stop == "exhaust":
            chunks.emit(ExhaustFrame, limit=self.session.agent.limit)
        payload = result_payload(done)
        payload["stop"] = stop
        # Which model answered, shown with the answer (``AnsweredPayload``).
        payload["model"] = called_model(self.session.spec)
        payload["response_model"] = self.response_model
        if done.usage is not None:
            # The answer's cost, shown with it.
            payload["usage"] = usage_payload(done.usage, chunks.meter.cost(done.usage))
        chunks.emit(FinishFrame, result=payload, context=chunks.context())

    async def _failed(self, error: BaseException | None, telemetry: RunTelemetry | None) -> None:
        message = str(error) or type(error).__name__
        if telemetry is not None:
            telemetry.finish("error", "error", error)
        chunks = self.chunks
        content = chunks.content
        partial = (content, chunks.thinking)
        if content:
            # What streamed before the failure stays in the transcript.
            self.session.agent.context.messages.add({"role": "assistant", "content": content})

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

        await self.commit(then=failed)
        chunks.emit(ErrorFrame, code="run_failed", message=message[:500])

    async def _fail_settling(self) -> None:
        """Settling failed (the database, a payload): the run still ends, and says so."""
        chunks = self.chunks
        try:
            await in_thread(finish_run)(
                self.run_id,
                "error",
                None,
                "the reply could not be saved",
                partial=(chunks.content, chunks.thinking),
            )
        except Exception:
            logger.exception("marking run %s failed", self.run_id)
        chunks.emit(ErrorFrame, code="run_failed", message="the reply could not be saved")
