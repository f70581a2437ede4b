"""Tools the client runs: advertised to the model, never run here; a call ends the run.

OpenAI's function tools work this way: the response carries the calls and the client's next
request brings their results. Here a client tool answers with a placeholder, and the run stops
before its next turn (the kit's scheduler seam), so the other calls of that turn still run and
the history holds the assistant turn with all its calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from orkestrel.core import (
    AbortSignal,
    Agent,
    Authority,
    AuthorityContext,
    AuthorityDecision,
    Tool,
    ToolCall,
    ToolDefinition,
    ToolResult,
)

__all__ = [
    "CLIENT_ZONE",
    "HANDOFF_REASON",
    "HANDOFF_STOP",
    "PENDING_CONTENT",
    "PENDING_RESULT",
    "ClientToolAuthority",
    "Handoff",
    "client_tool",
]

# What the history holds for a client call until the client sends its result.
PENDING_RESULT = {"pending": "the client runs this tool; its result comes with the next request"}
# That placeholder as the tool message's content (the kit stores a value as JSON).
PENDING_CONTENT = json.dumps(PENDING_RESULT, ensure_ascii=False)
HANDOFF_REASON = "waiting for the client's tool results"
# The stop reason of a run that ended on client calls (OpenAI's ``finish_reason``).
HANDOFF_STOP = "tool_calls"
CLIENT_ZONE = "client"


class Handoff:
    """The client tool calls of one run; once there is one, the run stops before its next turn."""

    __slots__ = ("_agent", "calls", "names")

    def __init__(self, agent: Agent, names: frozenset[str]) -> None:
        self._agent = agent
        self.names = names
        self.calls: list[ToolCall] = []
        agent.emitter.on("tool", self._seen)

    @property
    def stopped(self) -> bool:
        """Whether the run stopped to hand calls to the client."""
        return bool(self.calls)

    def _seen(self, call: ToolCall, result: ToolResult) -> None:
        # Only a call that reached the client tool: a denied or scoped-out one is the
        # model's to see, not the client's.
        if call.name in self.names and result.error is None and result.value == PENDING_RESULT:
            self.calls.append(call)

    async def yield_(self, *, signal: AbortSignal | None = None) -> None:
        """The kit's scheduler seam, awaited before every turn after the first."""
        if self.calls:
            self._agent.abort(HANDOFF_REASON)


def client_tool(definition: ToolDefinition) -> Tool:
    """A kit tool for ``definition`` that runs nothing (the client will)."""

    async def execute(arguments: Mapping[str, Any]) -> Any:
        return PENDING_RESULT

    return Tool(
        definition.name,
        execute,
        definition.description,
        parameters=definition.parameters,
        strict=definition.strict,
    )


class ClientToolAuthority(Authority):
    """The profile's gate for its own tools; a client tool is the client's to allow."""

    __slots__ = ("_inner", "_names")

    def __init__(self, inner: Authority | None, names: Sequence[str]) -> None:
        super().__init__()
        self._inner = inner
        self._names = frozenset(names)

    def evaluate(
        self, context: AuthorityContext | ToolCall | Mapping[str, Any]
    ) -> AuthorityDecision:
        call = context.call if isinstance(context, AuthorityContext) else context
        if isinstance(call, ToolCall) and call.name in self._names:
            return AuthorityDecision(CLIENT_ZONE, True, None)
        if self._inner is None:
            return AuthorityDecision("default", True, None)
        return self._inner.evaluate(context)
