"""How a run's chunk stream becomes frames, and the in-flight answer a joining tab reads.

The run's drive loop hands over every item of its chunk stream in order (``ChunkFrames.take``):
the kit's chunks, and the markers the run puts in the stream so that what the kit reports
outside it keeps its place (``RequestStarted``, ``Executing``, ``CallDelta``, ``ToolReport``,
``Turned``). Text and pieces of tool calls wait in buffers until the run's pacer lets them out
(``flush``); every other frame goes out at once, after the text before it. No I/O: frames go
to the run's ``FrameLog``, and what must be stored before the next item is returned (a
``Write``) for the run to do; the clock is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, assert_never

from conversations.writer import Thought
from orkestrel.core import (
    Message,
    ThinkChunk,
    TokenChunk,
    TokenUsage,
    ToolCall,
    ToolChunk,
    ToolResult,
    UsageChunk,
)
from orkestrel.protocol import (
    ContextPayload,
    ServerFrame,
    SkillsFrame,
    ThinkFrame,
    TokenFrame,
    ToolCallFrame,
    ToolExecuteFrame,
    ToolFrame,
    ToolPayload,
    ToolProgressFrame,
    UsageFrame,
    call_payload,
    tool_payload,
    usage_payload,
)
from orkestrel.providers.base import CallDelta

from ..runtime.builtins.skills import NAME as SKILLS_TOOL
from ..runtime.reports import ToolReport
from .frame_log import FrameLog
from .inbox import Turned
from .lifecycle import Executing, Lifecycle, RequestStarted
from .payloads import joined
from .progress import RunningCalls

__all__ = [
    "TEXT_FRAME_CHARS",
    "ChunkFrames",
    "Commit",
    "Meter",
    "RunItem",
    "TakePending",
    "Write",
    "coalesced",
    "skills_activated",
]

# The most text one token or think frame carries: at most 4 bytes a character, 256 KiB, well
# under the 1 MiB a websocket server accepts by default (Daphne's, both ways).
TEXT_FRAME_CHARS = 65_536

# What a run's chunk stream carries: the kit's chunks and the run's own markers.
RunItem = (
    TokenChunk
    | ThinkChunk
    | ToolChunk
    | UsageChunk
    | CallDelta
    | Executing
    | RequestStarted
    | ToolReport
    | Turned
)


@dataclass(frozen=True, slots=True)
class Commit:
    """A tool's result came: the turn with its calls and its tool message are final. Store
    them, then tell every tab of the skills the call activated (``skills``, when it did)."""

    skills: SkillsFrame | None = None


@dataclass(frozen=True, slots=True)
class TakePending:
    """Between two turns: the messages sent meanwhile join the run (then set ``turned``)."""

    turned: Turned


# What the run must store before it hands over the next item.
Write = Commit | TakePending


class Meter(Protocol):
    """What usage frames read of the run's session: its model's prices, its context meter."""

    def cost(self, usage: TokenUsage) -> Decimal | None: ...

    def cost_after(self, spent: TokenUsage) -> Decimal | None: ...

    def context(self, total: TokenUsage) -> ContextPayload: ...


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


def skills_activated(chunk: ToolChunk) -> SkillsFrame | None:
    """The frame that shows every tab the skills the model activated (its ``skills`` tool)."""
    value = chunk.result.value
    if chunk.call.name != SKILLS_TOOL or not isinstance(value, dict):
        return None
    active = value.get("active")
    if value.get("activated") and isinstance(active, list):
        return SkillsFrame(skills=[str(name) for name in active])
    return None


class ChunkFrames:
    """One run's chunk stream mapped to its frames; its answer, reasoning and calls so far."""

    __slots__ = (
        "_claimed",
        "_deltas",
        "_now",
        "_thoughts",
        "_tokens",
        "answer",
        "lifecycle",
        "log",
        "meter",
        "reasoning",
        "running",
        "spent",
        "tools",
        "total",
    )

    def __init__(self, log: FrameLog, meter: Meter, now: Callable[[], float]) -> None:
        self.log = log
        self.meter = meter
        self._now = now
        self.lifecycle = Lifecycle(self.emit, now, TEXT_FRAME_CHARS)
        # The calls running now, which the tools' reports are about (``tool_progress``).
        self.running = RunningCalls()
        # The in-flight answer and reasoning as parts, joined on demand (linear in length).
        self.answer: list[str] = []
        self.reasoning: list[str] = []
        self.tools: list[ToolPayload] = []
        # The conversation's cumulative usage, as of the start of the run plus this run's calls.
        self.total = TokenUsage()
        # This run's own usage so far (its cost is priced from it).
        self.spent: TokenUsage | None = None
        # Text, and pieces of tool calls the model is writing, not sent yet (at most once a
        # tick: ``flush``).
        self._tokens: list[str] = []
        self._thoughts: list[str] = []
        self._deltas: list[CallDelta] = []
        # How many of the run's assistant messages took their reasoning: the k-th is request k's.
        self._claimed = 0

    @property
    def content(self) -> str:
        return joined(self.answer)

    @property
    def thinking(self) -> str:
        return joined(self.reasoning)

    @property
    def unclaimed_thinking(self) -> str:
        """The reasoning no committed message holds yet: the in-flight answer's."""
        return self.lifecycle.thinking_from(self._claimed)

    @property
    def buffered(self) -> bool:
        """Whether text or pieces of calls wait for ``flush``."""
        return bool(self._tokens or self._thoughts or self._deltas)

    def context(self) -> ContextPayload:
        """The context meter as of the run's latest reported usage."""
        return self.meter.context(self.total)

    def emit(self, kind: Callable[..., ServerFrame], **fields: Any) -> None:
        """Send a frame of ``kind`` (numbered by the log).

        Buffered text goes out first, so frames keep the order the run produced them in.
        """
        if kind is not TokenFrame and kind is not ThinkFrame:
            self.flush()
        self.log.emit(kind, **fields)

    def flush(self) -> None:
        """Send the coalesced token / think deltas as one frame each (or several, when the
        text is longer than ``TEXT_FRAME_CHARS``: every frame stays under a socket's limit),
        then the pieces of tool calls being written."""
        if self._thoughts:
            text = "".join(self._thoughts)
            self._thoughts.clear()
            for start in range(0, len(text), TEXT_FRAME_CHARS):
                self.log.text(ThinkFrame, text[start : start + TEXT_FRAME_CHARS])
        if self._tokens:
            text = "".join(self._tokens)
            self._tokens.clear()
            for start in range(0, len(text), TEXT_FRAME_CHARS):
                self.log.text(TokenFrame, text[start : start + TEXT_FRAME_CHARS])
        if self._deltas:
            self._flush_calls()

    def _flush_calls(self) -> None:
        deltas, self._deltas = self._deltas, []
        emit = self.log.emit
        for index, call_id, name, pieces in coalesced(deltas):
            text = "".join(pieces)
            # A long argument (a file's text) goes in several frames, each under the limit.
            for start in range(0, max(len(text), 1), TEXT_FRAME_CHARS):
                emit(
                    ToolCallFrame,
                    index=index,
                    id=call_id,
                    name=name,
                    arguments=text[start : start + TEXT_FRAME_CHARS],
                )

    def take(self, item: RunItem) -> Write | None:
        """Map one item of the chunk stream to its frames; what must be stored before the
        next item, if anything."""
        # Nearly every item is text: it goes before the ``match``, whose class patterns cost a
        # few times a type check per item (subclasses, never seen, take the ``match``).
        if type(item) is TokenChunk:
            self._answer_text(item.content)
            return None
        if type(item) is ThinkChunk:
            self._reasoning_text(item.content)
            return None
        lifecycle = self.lifecycle
        match item:
            case TokenChunk(content=content):
                self._answer_text(content)
            case ThinkChunk(content=content):
                self._reasoning_text(content)
            case CallDelta():
                lifecycle.close_block()
                self._deltas.append(item)
            case Executing(calls=calls):
                self.calls_started(calls)
            case ToolChunk(call=call, result=result):
                self.running.ended(call.id)
                lifecycle.request_done()
                self.tool_ended(call, result)
                # The assistant turn with its calls and this tool message are now final.
                return Commit(skills_activated(item))
            case RequestStarted(turn=turn):
                lifecycle.request_started(turn)
            case ToolReport():
                self.progress(item)
            case Turned():
                lifecycle.close_block()
                return TakePending(item)
            case UsageChunk(usage=usage):
                self._used(usage)
            case _:
                assert_never(item)
        return None

    def _answer_text(self, content: str) -> None:
        self.lifecycle.text(content)
        self.answer.append(content)
        self._tokens.append(content)

    def _reasoning_text(self, content: str) -> None:
        self.lifecycle.thinking(content)
        self.reasoning.append(content)
        self._thoughts.append(content)

    def call_piece(self, delta: CallDelta) -> None:
        """A piece of a tool call written after the stream closed: it goes with the next
        flush."""
        self._deltas.append(delta)

    def calls_started(self, calls: Sequence[ToolCall]) -> None:
        """Calls start running now: each card says so until its result comes."""
        self.lifecycle.request_done()
        self.running.started(calls, self._now())
        for call in calls:
            self.emit(ToolExecuteFrame, call=call_payload(call))

    def tool_ended(self, call: ToolCall, result: ToolResult) -> None:
        """A call's result: its card shows it, and a joining tab reads it."""
        payload = tool_payload(call, result)
        self.tools.append(payload)
        self.emit(ToolFrame, **payload)

    def progress(self, report: ToolReport) -> None:
        """A tool reported on a running call: its card shows the report."""
        call = self.running.call_of(report)
        if call is not None:
            self.running.shown(call.id, report.display)
            self.emit(ToolProgressFrame, call=call.id, display=report.display)

    def _used(self, usage: TokenUsage) -> None:
        # A request's usage comes as it ends (before its calls run).
        self.lifecycle.request_done(usage)
        total = self.total = self.total + usage
        spent = self.spent = usage if self.spent is None else self.spent + usage
        meter = self.meter
        self.emit(
            UsageFrame,
            usage=usage_payload(usage, meter.cost(usage)),
            total=usage_payload(total, meter.cost_after(spent)),
            context=meter.context(total),
        )

    def answer_stored(self) -> None:
        """The answer so far is in a committed message: the in-flight answer starts over."""
        self.answer.clear()

    def claim(self, fresh: Sequence[Message]) -> dict[str, Thought]:
        """The reasoning each new assistant message keeps, by message id: the run's k-th
        assistant message is its k-th model request's answer."""
        thoughts: dict[str, Thought] = {}
        for message in fresh:
            if message.role != "assistant":
                continue
            thought = self.lifecycle.take(self._claimed)
            self._claimed += 1
            if thought is not None:
                thoughts[message.id] = thought
        return thoughts
