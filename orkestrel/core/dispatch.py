"""The dispatch step of a run: one turn's tool calls, from the model's list to their results.

Private to the kit; ``Run`` uses these, in this order, for every turn that called tools:

1. ``own_ids``: a call's id belongs to the agent, not the model. A missing id is minted, and
   one that repeats an id of this turn or of the conversation's history is re-minted, so no
   result overwrites another and a provider never sees one id twice.
2. ``plan``: the gates, per call in the model's order. A scoped-out tool is not found; in
   read-only mode a call that is not safe is refused (``READ_ONLY_REFUSAL``, recorded as a
   denial); the authority may deny. What passes is cut into batches: contiguous safe calls
   share one batch (they run concurrently), every other call is a batch of its own.
3. ``run_batches``: the batches one after another, so a write starts after the calls before
   it have finished and before the calls after it start.

``Run`` then writes the tool messages in call order, then every result's ``system`` texts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .authority import AuthorityContext, AuthorityDecision
from .messages import Message, ToolCall, ToolOutcome, ToolResult, mint_id

if TYPE_CHECKING:
    from .abort import AbortSignal
    from .authority import Authority
    from .conversation import Conversation
    from .emitter import Emitter
    from .observer import RunObserver
    from .tools import ToolManager

__all__: list[str] = []

READ_ONLY_REFUSAL = "write access is off for this conversation"
"""What the model reads for a call read-only mode refused (also the denial's reason)."""
READ_ONLY_ZONE = "read_only"
"""The zone of the ``deny`` event's decision for a call read-only mode refused."""
READ_ONLY_DENIAL = ToolOutcome("denied", READ_ONLY_REFUSAL, None)
READ_ONLY_DECISION = AuthorityDecision(READ_ONLY_ZONE, False, READ_ONLY_REFUSAL, None)


# -- own: tool-call ids belong to the agent ------------------------------------------------------


def history_ids(conversation: Conversation) -> set[str]:
    """Every tool-call id the conversation holds: its calls and its tool messages' links."""
    seen: set[str] = set()
    for section in conversation.sections:
        _collect(section.messages, seen)
    _collect(conversation.messages(), seen)
    return seen


def _collect(messages: Iterable[Message], seen: set[str]) -> None:
    # Once per run over the whole history: plain loops, no generator per message.
    add = seen.add
    for message in messages:
        calls = message.calls
        if calls is not None:
            for call in calls:
                add(call.id)
        else:
            link = message.tool_call_id
            if link is not None:
                add(link)


def own_ids(calls: Sequence[ToolCall], seen: set[str]) -> tuple[ToolCall, ...]:
    """The calls with ids of the agent's: unique within ``seen``, which learns every id kept."""
    for index, call in enumerate(calls):
        call_id = call.id
        if type(call_id) is not str or not call_id or call_id in seen or call_id.isspace():
            return _remint(calls, index, seen)
        seen.add(call_id)
    # The common turn: every id is the model's own and new.
    return calls if type(calls) is tuple else tuple(calls)


def _remint(calls: Sequence[ToolCall], start: int, seen: set[str]) -> tuple[ToolCall, ...]:
    # ``calls[:start]`` kept their ids (``seen`` has them already); mint from ``start`` on.
    owned = list(calls[:start])
    for call in calls[start:]:
        call_id = call.id
        if type(call_id) is not str or not call_id or call_id in seen or call_id.isspace():
            call = ToolCall(mint_id(), call.name, call.arguments, call.error)
        seen.add(call.id)
        owned.append(call)
    return tuple(owned)


# -- plan: the gates, then the batches -----------------------------------------------------------


Plan = tuple[dict[str, ToolResult], list[list[ToolCall]]]
"""A turn's calls after the gates: the ones answered without running (by id), the batches."""


def is_safe_call(tools: ToolManager, call: ToolCall) -> bool:
    """Whether ``call`` is read-only; a call that runs nothing (unknown tool, unparsable
    arguments: the manager answers it with an error) counts as read-only."""
    if call.error is not None:
        return True
    tool = tools.tool(call.name)
    return tool is None or tool.is_safe(call.arguments)


def plan(
    calls: Sequence[ToolCall],
    tools: ToolManager,
    *,
    allowed: Collection[str] | None,
    authority: Authority | None,
    read_only: bool,
    emitter: Emitter[Any],
    decided: dict[str, AuthorityDecision] | None = None,
) -> Plan:
    """Gate each call (scope, read-only mode, authority), then batch the ones that may run.

    ``decided`` (an observed run's) learns each call's authority decision, by call id.
    """
    answered: dict[str, ToolResult] = {}
    runnable: list[ToolCall] = []
    for call in calls:
        if allowed is not None and call.name not in allowed:
            # Scoped out: never advertised, so never callable either.
            answered[call.id] = ToolResult(call.id, call.name, error=f"tool not found: {call.name}")
            continue
        if read_only and not is_safe_call(tools, call):
            # Checked before the authority: a call that cannot run needs no verdict.
            answered[call.id] = ToolResult(
                call.id, call.name, error=READ_ONLY_REFUSAL, denial=READ_ONLY_DENIAL
            )
            emitter.emit("deny", call, READ_ONLY_DECISION)
            if decided is not None:
                decided[call.id] = READ_ONLY_DECISION
            continue
        if authority is not None:
            decision = authority.evaluate(AuthorityContext(call))
            if decided is not None:
                decided[call.id] = decision
            if not decision.allowed:
                reason = decision.reason
                error = f"denied: {reason}" if reason else "denied by authority"
                denial = ToolOutcome("denied", reason, decision.rule)
                answered[call.id] = ToolResult(call.id, call.name, error=error, denial=denial)
                emitter.emit("deny", call, decision)
                continue
        runnable.append(call)
    if len(runnable) <= 1 or read_only:
        # One call, or only safe ones (read-only mode let nothing else through): one batch.
        return answered, [runnable] if runnable else []
    return answered, batches(runnable, tools)


def batches(calls: Sequence[ToolCall], tools: ToolManager) -> list[list[ToolCall]]:
    """Contiguous safe calls as one batch each run; every other call as a batch of its own."""
    cut: list[list[ToolCall]] = []
    reads: list[ToolCall] = []
    for call in calls:
        if is_safe_call(tools, call):
            reads.append(call)
            continue
        if reads:
            cut.append(reads)
            reads = []
        cut.append([call])
    if reads:
        cut.append(reads)
    return cut


# -- run: the batches in order -------------------------------------------------------------------


async def run_batches(
    tools: ToolManager,
    batches: Sequence[list[ToolCall]],
    done: list[ToolResult],
    signal: AbortSignal,
) -> list[ToolResult]:
    """Run each batch after the one before; ``done`` gets each batch's results as it ends.

    A batch never starts once ``signal`` fired, so a cancel leaves later calls unstarted and
    ``done`` holds exactly the calls that ran to the end. Returns ``done``.
    """
    for batch in batches:
        if signal.aborted:
            break
        done.extend(await tools.execute(batch))
    return done


class ObservedCalls:
    """An observed run's batches: each call runs in a task of its own, between its observer's
    ``tool_started`` and ``tool_ended`` (so what the observer makes current is the call's)."""

    __slots__ = ("decided", "observer", "tools")

    def __init__(
        self, tools: ToolManager, observer: RunObserver, decided: dict[str, AuthorityDecision]
    ) -> None:
        self.tools = tools
        self.observer = observer
        self.decided = decided

    async def run(
        self, batches: Sequence[list[ToolCall]], done: list[ToolResult], signal: AbortSignal
    ) -> list[ToolResult]:
        """As ``run_batches``: each batch after the one before, none once ``signal`` fired."""
        for batch in batches:
            if signal.aborted:
                break
            if len(batch) == 1:
                done.append(await self.call(batch[0]))
                continue
            tasks = [asyncio.ensure_future(self.call(call)) for call in batch]
            try:
                done.extend(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                raise
        return done

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call, told to the observer."""
        observer = self.observer
        observer.tool_started(call, self.decided.get(call.id))
        try:
            result = (await self.tools.execute([call]))[0]
        except BaseException:
            observer.tool_ended(
                call, ToolResult(call.id, call.name, error="cancelled", cancelled=True)
            )
            raise
        observer.tool_ended(call, result)
        return result


# -- record: what the model reads ----------------------------------------------------------------

# One encoder for every tool message: ``json.dumps`` with options builds a new one per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode


def tool_content(result: ToolResult) -> str:
    """The tool message's text: the error, or the value (a payload's ``result``), as JSON."""
    payload: object = result.error if result.error is not None else result.value
    try:
        return _ENCODE(payload)
    except (TypeError, ValueError, RecursionError):
        return _ENCODE(str(payload))
