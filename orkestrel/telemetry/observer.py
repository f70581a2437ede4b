"""A run as telemetry: the kit's ``RunObserver`` turned into GenAI spans and Prometheus series.

One ``RunTelemetry`` per run or job (``observe`` makes it only when traces or metrics are on).
Spans: ``invoke_agent <profile>`` around the run, ``chat <model>`` per model request and
``execute_tool <tool>`` per tool call under it, each made current while it lasts (so a tool's
outgoing HTTP call and a delegate's child job carry it on). The host may keep the run's span
open past the kit's run (``hold``) to record how it settled (``finish``): a chat run that
paused for approvals settles after the kit's loop returned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from orkestrel.core import (
    AgentResult,
    AuthorityDecision,
    ProviderResult,
    TokenUsage,
    ToolCall,
    ToolResult,
)

from . import conventions as names
from .metrics import (
    COST,
    OPERATION_DURATION,
    RUNS,
    TIME_TO_FIRST_TOKEN,
    TOKEN_USAGE,
    TOOL_CALLS,
    child,
)
from .switch import SWITCH

__all__ = ["Decision", "RuleInfo", "RunLabels", "RunTelemetry", "observe"]

Decision = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """How the app names an authority rule, and whether its verdict is ``ask``."""

    label: str
    asks: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RunLabels:
    """What a run's telemetry says about it (never who ran it).

    ``price`` gives a usage's cost in USD (``None``: unpriced); ``rule_of`` names the rule of
    an authority decision; ``response_model`` the model the provider said answered.
    """

    kind: Literal["chat", "job"]
    profile: str
    provider: str
    model: str
    conversation_id: str | None = None
    run_id: int | None = None
    job_id: str | None = None
    price: Callable[[TokenUsage], float | None] | None = None
    rule_of: Callable[[AuthorityDecision], RuleInfo | None] | None = None
    response_model: Callable[[], str] | None = None


class _Open:
    """A span made current in the task that opened it, until it ends."""

    __slots__ = ("span", "token")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.token: object | None = otel_context.attach(trace.set_span_in_context(span))

    def detach(self) -> None:
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
            self.token = None


class RunTelemetry:
    """The kit's observer for one run: spans when traces are on, series when metrics are."""

    def __init__(self, labels: RunLabels) -> None:
        self.labels = labels
        self.tracer = SWITCH.tracer
        self.metrics = SWITCH.metrics
        self.content = SWITCH.content
        self.span: Span | None = None
        self._current: _Open | None = None
        self._held = False
        self._finished = False
        self._chat: _Open | None = None
        self._started = 0.0
        self._first: float | None = None
        self._tools: dict[str, tuple[_Open | None, Decision]] = {}
        self._model_labels = ("chat", labels.provider, labels.model)
        self.result: AgentResult | None = None

    # -- the run -------------------------------------------------------------------------------

    def open(self) -> None:
        """Start the run's span now (before the kit's run: what the host does first is in it)."""
        if self.tracer is None or self.span is not None:
            return
        labels = self.labels
        attributes: dict[str, Any] = {
            names.OPERATION_NAME: names.INVOKE_AGENT,
            names.PROVIDER_NAME: labels.provider,
            names.AGENT_NAME: labels.profile,
            names.REQUEST_MODEL: labels.model,
        }
        if labels.conversation_id is not None:
            attributes[names.CONVERSATION_ID] = labels.conversation_id
        if labels.run_id is not None:
            attributes[names.RUN_ID] = labels.run_id
        if labels.job_id is not None:
            attributes[names.JOB_ID] = labels.job_id
        self.span = self.tracer.start_span(
            f"{names.INVOKE_AGENT} {labels.profile}", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def hold(self) -> RunTelemetry:
        """Keep the run's span open past the kit's run, until the host's ``finish``."""
        self._held = True
        return self

    def run_started(self) -> None:
        self.open()
        if self.span is not None:
            self._current = _Open(self.span)

    def run_ended(self, result: AgentResult | None, error: BaseException | None) -> None:
        if self._current is not None:
            self._current.detach()
            self._current = None
        self.result = result
        if self._held:
            return
        if result is None:
            self.finish("error", "error", error)
        else:
            self.finish("partial" if result.partial else "done", result.stop)

    def approval_wait(self, calls: list[tuple[str, str]]) -> None:
        """The run paused for a person's decisions on ``calls`` (id, tool)."""
        if self.span is not None:
            self.span.add_event(
                names.APPROVAL_WAIT,
                {
                    names.TOOL_CALL_ID: [call_id for call_id, _ in calls],
                    names.TOOL_NAME: [tool for _, tool in calls],
                },
            )

    def finish(self, status: str, stop: str, error: BaseException | str | None = None) -> None:
        """The run settled as ``status`` for ``stop``: end its span, count it (once)."""
        if self._finished:
            return
        self._finished = True
        if self.metrics:
            child(RUNS, self.labels.kind, self.labels.profile, status, stop).inc()
        span = self.span
        if span is None:
            return
        span.set_attribute(names.RUN_STATUS, status)
        span.set_attribute(names.STOP_REASON, stop)
        result = self.result
        if result is not None and result.usage is not None:
            _usage_attributes(span, result.usage)
        model = self.labels.response_model() if self.labels.response_model else ""
        if model:
            span.set_attribute(names.RESPONSE_MODEL, model)
        if error is not None:
            kind = error if isinstance(error, str) else type(error).__qualname__
            span.set_attribute(names.ERROR_TYPE, kind)
            span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
        span.end()

    # -- model requests -----------------------------------------------------------------------

    def request_started(self, turn: int) -> None:
        self._started = time.perf_counter()
        self._first = None
        if self.tracer is None:
            return
        labels = self.labels
        span = self.tracer.start_span(
            f"{names.CHAT} {labels.model}",
            kind=SpanKind.CLIENT,
            attributes={
                names.OPERATION_NAME: names.CHAT,
                names.PROVIDER_NAME: labels.provider,
                names.REQUEST_MODEL: labels.model,
                names.TURN: turn,
            },
        )
        self._chat = _Open(span)

    def first_chunk(self) -> None:
        self._first = seconds = time.perf_counter() - self._started
        if self.metrics:
            child(TIME_TO_FIRST_TOKEN, *self._model_labels).observe(seconds)
        if self._chat is not None:
            self._chat.span.set_attribute(names.TIME_TO_FIRST_CHUNK, seconds)

    def request_ended(self, result: ProviderResult | None, error: BaseException | None) -> None:
        seconds = time.perf_counter() - self._started
        usage = result.usage if result is not None else None
        failure = "" if error is None else _error_type(error)
        if self.metrics:
            labels = self._model_labels
            child(OPERATION_DURATION, *labels, failure).observe(seconds)
            if usage is not None:
                child(TOKEN_USAGE, *labels, "input").observe(usage.prompt)
                child(TOKEN_USAGE, *labels, "output").observe(usage.completion)
                price = self.labels.price
                cost = price(usage) if price is not None else None
                if cost:
                    child(COST, self.labels.profile, self.labels.model).inc(cost)
        chat = self._chat
        if chat is None:
            return
        self._chat = None
        chat.detach()
        span = chat.span
        if result is not None:
            if result.stop_reason:
                span.set_attribute(names.RESPONSE_FINISH_REASONS, [result.stop_reason])
            model = self.labels.response_model() if self.labels.response_model else ""
            span.set_attribute(names.RESPONSE_MODEL, model or self.labels.model)
            if usage is not None:
                _usage_attributes(span, usage)
            if self.content:
                span.set_attribute(names.OUTPUT_MESSAGES, _output(result))
        if error is not None:
            span.set_attribute(names.ERROR_TYPE, failure)
            span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
        span.end()

    # -- tool calls ---------------------------------------------------------------------------

    def tool_started(self, call: ToolCall, decision: AuthorityDecision | None) -> None:
        verdict, rule = self._verdict(decision)
        opened: _Open | None = None
        if self.tracer is not None:
            attributes: dict[str, Any] = {
                names.OPERATION_NAME: names.EXECUTE_TOOL,
                names.TOOL_NAME: call.name,
                names.TOOL_CALL_ID: call.id,
                names.TOOL_TYPE: "function",
                names.AUTHORITY_DECISION: verdict,
            }
            if decision is not None:
                attributes[names.AUTHORITY_ZONE] = decision.zone
                if decision.reason:
                    attributes[names.AUTHORITY_REASON] = decision.reason
            if rule is not None:
                attributes[names.AUTHORITY_RULE] = rule
            if self.content:
                attributes[names.TOOL_CALL_ARGUMENTS] = _json(call.arguments)
            opened = _Open(
                self.tracer.start_span(
                    f"{names.EXECUTE_TOOL} {call.name}",
                    kind=SpanKind.INTERNAL,
                    attributes=attributes,
                )
            )
        self._tools[call.id] = (opened, verdict)

    def tool_ended(self, call: ToolCall, result: ToolResult) -> None:
        opened, verdict = self._tools.pop(call.id, (None, "allow"))
        outcome: str = result.outcome.kind
        if verdict == "ask" and outcome != "denied":
            outcome = "held"
        if self.metrics:
            child(TOOL_CALLS, call.name, verdict, outcome).inc()
        if opened is None:
            return
        opened.detach()
        span = opened.span
        span.set_attribute(names.TOOL_OUTCOME, outcome)
        if outcome == "held":
            span.add_event(names.APPROVAL_WAIT, {names.TOOL_CALL_ID: call.id})
        if self.content:
            span.set_attribute(
                names.TOOL_CALL_RESULT, _json(result.error if result.error else result.value)
            )
        if result.error is not None and outcome == "error":
            span.set_attribute(names.ERROR_TYPE, "tool_error")
            span.set_status(Status(StatusCode.ERROR, result.error[:200]))
        span.end()

    def _verdict(self, decision: AuthorityDecision | None) -> tuple[Decision, str | None]:
        if decision is None:
            return "allow", None
        rule_of = self.labels.rule_of
        info = rule_of(decision) if rule_of is not None else None
        label = info.label if info is not None else None
        if not decision.allowed:
            return "deny", label
        if info is not None and info.asks:
            return "ask", label
        return "allow", label


def observe(labels: Callable[[], RunLabels]) -> RunTelemetry | None:
    """A run's telemetry (``labels`` read only then), or ``None`` while traces and metrics are
    both off: nothing is observed and the run pays nothing."""
    if SWITCH.tracer is None and not SWITCH.metrics:
        return None
    return RunTelemetry(labels())


def _usage_attributes(span: Span, usage: TokenUsage) -> None:
    span.set_attribute(names.USAGE_INPUT_TOKENS, usage.prompt)
    span.set_attribute(names.USAGE_OUTPUT_TOKENS, usage.completion)
    span.set_attribute(names.USAGE_CACHE_READ_INPUT_TOKENS, usage.cache_read)
    span.set_attribute(names.USAGE_CACHE_CREATION_INPUT_TOKENS, usage.cache_write)
    span.set_attribute(names.USAGE_REASONING_OUTPUT_TOKENS, usage.reasoning)


def _error_type(error: BaseException) -> str:
    code = getattr(error, "code", None)
    return code if isinstance(code, str) and code else type(error).__qualname__


def _output(result: ProviderResult) -> str:
    parts: list[dict[str, Any]] = []
    if result.content:
        parts.append({"type": "text", "content": result.content})
    for call in result.tools or ():
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        )
    message = {"role": "assistant", "parts": parts, "finish_reason": result.stop_reason or ""}
    return _json([message])


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
