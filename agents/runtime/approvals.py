"""Human approval: a call an ``ask`` rule matched waits, unrun, for a person's decision.

The authority lets the call through (``PolicyAuthority`` with a gate) and the gate holds it:
the run's tools (``RunTools``) answer it with a placeholder instead of running it, and the run stops
before its next turn (the kit's scheduler seam, as for the client's tools), so the turn's
other calls still run and the history holds the assistant turn with all its calls. The run
settles as ``awaiting_approval``; once every held call is decided, the next run executes the
approved ones (``apply_decisions``), answers the denied ones with their reason, and goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversations.approvals import Decided
from orkestrel.core import (
    AbortSignal,
    Agent,
    Message,
    Scheduler,
    ToolCall,
    ToolManager,
    ToolOutcome,
    ToolResult,
)
from orkestrel.core.dispatch import (
    READ_ONLY_DENIAL,
    READ_ONLY_REFUSAL,
    is_safe_call,
    tool_content,
)

from ..models import AuthorityRule
from .questions import AWAITING_ANSWER_CONTENT

__all__ = [
    "APPROVAL_REASON",
    "APPROVAL_STOP",
    "AWAITING_RESULT",
    "ApprovalGate",
    "Held",
    "apply_decisions",
    "denial_text",
]

# What the history holds for a held call until it is decided (replaced then).
AWAITING_RESULT = {"pending": "this call waits for a person's approval"}
AWAITING_CONTENT = json.dumps(AWAITING_RESULT, ensure_ascii=False)
# The placeholders a decision (or an answer) replaces.
PLACEHOLDERS = frozenset((AWAITING_CONTENT, AWAITING_ANSWER_CONTENT))
APPROVAL_REASON = "waiting for a person's approval"
# The stop reason of a run that paused on held calls, and the status it settles with.
APPROVAL_STOP = "awaiting_approval"


@dataclass(frozen=True, slots=True)
class Held:
    """A call waiting for a decision: the call, the rule that asked, the tool's schema."""

    call: ToolCall
    rule: AuthorityRule
    parameters: Mapping[str, Any] | None


class ApprovalGate:
    """The calls of one run that wait for a person; once there is one, the run stops before
    its next turn (after the scheduler it wraps, ``then``, had its say). The run's tools
    (``RunTools``) ask it which calls to hold back."""

    __slots__ = ("_tools", "agent", "held", "then")

    def __init__(self, tools: ToolManager) -> None:
        self._tools = tools
        self.agent: Agent | None = None
        self.then: Scheduler | None = None
        self.held: dict[str, Held] = {}

    @property
    def paused(self) -> bool:
        """Whether the run stopped to wait for approvals."""
        return bool(self.held)

    def hold(self, call: ToolCall, rule: AuthorityRule) -> None:
        """Keep ``call`` from running until a person decides (the authority's ``ask``)."""
        tool = self._tools.tool(call.name)
        self.held[call.id] = Held(call, rule, tool.parameters if tool is not None else None)

    def holds(self, call: ToolCall) -> bool:
        return call.id in self.held

    def placeholder(self, call: ToolCall) -> ToolResult:
        return ToolResult(call.id, call.name, value=AWAITING_RESULT)

    async def yield_(self, *, signal: AbortSignal | None = None) -> None:
        """The kit's scheduler seam, awaited before every turn after the first."""
        if self.then is not None:
            await self.then.yield_(signal=signal)
        if self.held and self.agent is not None:
            self.agent.abort(APPROVAL_REASON)


def denial_text(decided: Decided) -> str:
    """What the model reads for a call a person denied (or nobody decided in time)."""
    if decided.expired:
        return f"denied: {decided.reason}"
    who = f"denied by {decided.by}" if decided.by else "denied by a person"
    return f"{who}: {decided.reason}" if decided.reason else who


async def apply_decisions(agent: Agent, decisions: Sequence[Decided]) -> list[ToolResult]:
    """Run the approved calls (with their final arguments), answer the denied ones, and put
    each result in place of its placeholder in the live history; the results, in order.

    The calls run one after another, in the model's order: a write must not overtake the one
    before it. Read-only mode still refuses a write, whoever approved it.
    """
    tools = agent.context.tools
    results: list[ToolResult] = []
    for decided in decisions:
        call = ToolCall(decided.call_id, decided.tool, dict(decided.arguments))
        if decided.answer is not None:
            # A question's answer (or that none came) is the call's result; nothing runs.
            result = ToolResult(call.id, call.name, value=decided.answer)
        elif not decided.approved:
            text = denial_text(decided)
            result = ToolResult(
                call.id, call.name, error=text, denial=ToolOutcome("denied", text, None)
            )
        elif agent.read_only and not is_safe_call(tools, call):
            result = ToolResult(
                call.id, call.name, error=READ_ONLY_REFUSAL, denial=READ_ONLY_DENIAL
            )
        else:
            result = await tools.execute(call)
        agent.emitter.emit("tool", call, result)
        results.append(result)
    _replace_placeholders(agent, {result.id: result for result in results})
    return results


def _replace_placeholders(agent: Agent, results: Mapping[str, ToolResult]) -> None:
    conversation = agent.context.messages
    replaced: list[Message] = []
    for message in conversation.messages():
        result = results.get(message.tool_call_id or "") if message.role == "tool" else None
        if result is not None and message.content in PLACEHOLDERS:
            message = Message(
                message.id,
                "tool",
                tool_content(result),
                tool_call_id=message.tool_call_id,
                outcome=result.outcome,
            )
        replaced.append(message)
    # The live tail is rebuilt in order, ids kept: the store then updates those rows only.
    conversation.clear()
    conversation.add(replaced)
