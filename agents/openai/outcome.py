"""A run's frames folded into what an OpenAI client sees: text, reasoning, the client's tool
calls, usage and why it stopped (a run that paused for a person's approval is ``paused``, one
that waits for the user's answer to a question is ``asking``: never an empty success).

Both APIs (chat completions and responses) read runs through this, streamed or not, so a
streamed answer and a whole one always say the same. The profile's own tool activity is not
part of the answer (the operator sees it on the run); a turn's text before its tool calls is,
separated from the next turn's by a blank line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from orkestrel.core.abort import TIMED_OUT
from orkestrel.core.budget import BUDGET_EXHAUSTED

from ..runs.interruptions import INTERRUPTED
from ..runtime.approvals import APPROVAL_STOP
from ..runtime.client_tools import HANDOFF_STOP, PENDING_RESULT
from ..runtime.questions import QUESTION_STOP
from .questions import INPUT_REQUIRED

__all__ = ["ClientCall", "Delta", "Outcome"]

TURN_SEPARATOR = "\n\n"
# A client call's result in its ``tool`` frame: it went to the client.
PENDING = {"value": PENDING_RESULT}


@dataclass(frozen=True, slots=True)
class ClientCall:
    """A call of one of the client's tools, as OpenAI spells it (``arguments`` as JSON)."""

    index: int
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of the answer: text, reasoning, or a client tool call."""

    kind: Literal["content", "reasoning", "call"]
    text: str = ""
    call: ClientCall | None = None


@dataclass
class Outcome:
    """The answer so far of one run; ``feed`` each frame in order."""

    client_tools: frozenset[str]
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[ClientCall] = field(default_factory=list)
    usage: Mapping[str, int] | None = None
    stop: str | None = None
    reason: str | None = None
    failed: bool = False
    finished: bool = False
    # Whether the current turn showed text, and whether a tool turn ended since.
    _spoke: bool = False
    _turned: bool = False

    def feed(self, frame: Mapping[str, Any]) -> list[Delta]:
        """Fold one frame in; the pieces of answer it adds."""
        kind = frame.get("type")
        if kind == "token":
            text = frame["content"]
            if self._turned and self._spoke:
                text = TURN_SEPARATOR + text
            self._turned = False
            self._spoke = True
            self.content.append(text)
            return [Delta("content", text)]
        if kind == "think":
            self.reasoning.append(frame["content"])
            return [Delta("reasoning", frame["content"])]
        if kind == "tool":
            self._turned = True
            call = frame["call"]
            if call["name"] not in self.client_tools or frame["result"] != PENDING:
                return []  # the profile's own tool, or a client call refused here
            made = ClientCall(
                len(self.calls),
                call["id"],
                call["name"],
                json.dumps(call["arguments"], ensure_ascii=False),
            )
            self.calls.append(made)
            return [Delta("call", call=made)]
        if kind == "abort":
            self.reason = frame["reason"]
        elif kind == "finish":
            result = frame["result"]
            self.stop = result["stop"]
            self.usage = result.get("usage")
            self.finished = True
            if self.stop == INTERRUPTED:
                # Its process died: the text it had saved, where its tokens never came here.
                saved, said = result.get("content") or "", self.text
                if saved.startswith(said) and len(saved) > len(said):
                    self.content.append(saved[len(said) :])
                    return [Delta("content", saved[len(said) :])]
        elif kind == "error" and frame.get("run") is not None:
            self.failed = True
            self.finished = True
        return []

    @property
    def text(self) -> str:
        return "".join(self.content)

    @property
    def thinking(self) -> str:
        return "".join(self.reasoning)

    @property
    def paused(self) -> bool:
        """Whether the run stopped on tool calls that wait for a person's approval."""
        return self.stop == APPROVAL_STOP

    @property
    def asking(self) -> bool:
        """Whether the run stopped on questions (``ask_user``) that wait for the user."""
        return self.stop == QUESTION_STOP

    @property
    def cut_short(self) -> bool:
        """Whether a bound ended the run (its token budget, turn limit or timeout)."""
        return self.stop == "exhaust" or (
            self.stop == "abort" and self.reason in (BUDGET_EXHAUSTED, TIMED_OUT)
        )

    @property
    def finish_reason(self) -> str:
        """Chat completions' ``finish_reason``: ``tool_calls``, ``length`` (a bound) or
        ``stop``."""
        if self.stop == HANDOFF_STOP:
            return "tool_calls"
        if self.cut_short:
            return "length"
        return "stop"

    @property
    def incomplete_reason(self) -> str | None:
        """The Responses API's ``incomplete_details.reason``; ``None`` when it completed (a
        paused run completes with its approval requests, as OpenAI's hosted MCP does)."""
        if self.stop in ("done", HANDOFF_STOP, APPROVAL_STOP):
            return None
        if self.stop == "exhaust" or self.reason == BUDGET_EXHAUSTED:
            return "max_output_tokens"
        if self.reason == TIMED_OUT:
            return "timeout"
        if self.stop == INTERRUPTED:
            return INTERRUPTED
        if self.stop == QUESTION_STOP:
            # A stored response read back (the request itself was answered ``409``).
            return INPUT_REQUIRED
        return "cancelled" if self.stop == "abort" else None
