"""The question bridge: the model's ``ask_user`` calls wait, unanswered, for the user.

Seed 004's "question bridge", a trusted host capability and never provider data: a chat run
has one, a job has none (its ``ask_user`` refuses, see ``builtins.ask_user``). The run's tools
(``RunTools``) ask the bridge which calls to hold: it holds each well-formed ``ask_user`` call,
answers it with a placeholder, and stops the run before its next turn (the kit's scheduler
seam, as the approval gate does). The run settles as ``awaiting_input`` and stores the
questions; once they are answered (or their time ran out) the next run gives the model each
answer as its call's result (``apply_decisions``) and goes on. Nothing waits in memory, so a
server restart loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from conversations.questions import ASK_USER, Asked
from orkestrel.core import AbortSignal, Agent, Scheduler, ToolCall, ToolManager, ToolResult

__all__ = [
    "AWAITING_ANSWER",
    "AWAITING_ANSWER_CONTENT",
    "MAX_CHOICES",
    "MAX_TIMEOUT",
    "QUESTION_REASON",
    "QUESTION_STOP",
    "QuestionBridge",
    "parse_question",
]

# What the history holds for an asked question until it is answered (replaced then).
AWAITING_ANSWER = {"pending": "this question waits for the user's answer"}
AWAITING_ANSWER_CONTENT = json.dumps(AWAITING_ANSWER, ensure_ascii=False)
QUESTION_REASON = "waiting for the user's answer"
# The stop reason of a run that paused on questions, and the status it settles with.
QUESTION_STOP = "awaiting_input"
MAX_QUESTION = 4_000
MAX_CHOICES = 20
MAX_CHOICE = 200
# A week: a question may wait over a weekend; without a timeout it waits until answered.
MAX_TIMEOUT = 7 * 24 * 3600


def parse_question(call_id: str, arguments: Mapping[str, Any]) -> Asked:
    """The question an ``ask_user`` call asks; ``ValueError`` saying what is wrong with it."""
    text = arguments.get("question")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_QUESTION:
        raise ValueError(f"`question` must be a non-blank string of at most {MAX_QUESTION} chars")
    choices = arguments.get("choices") or []
    if (
        not isinstance(choices, list)
        or len(choices) > MAX_CHOICES
        or not all(isinstance(c, str) and c.strip() and len(c) <= MAX_CHOICE for c in choices)
        or len(set(choices)) != len(choices)
    ):
        raise ValueError(
            f"`choices` must be a list of at most {MAX_CHOICES} distinct non-blank strings "
            f"of at most {MAX_CHOICE} characters"
        )
    free_text = arguments.get("free_text")
    if free_text is None:
        free_text = not choices
    if not isinstance(free_text, bool):
        raise ValueError("`free_text` must be true or false")
    if not choices and not free_text:
        raise ValueError(
            "without `choices`, `free_text` must be true: the user needs a way to answer"
        )
    timeout = arguments.get("timeout_seconds")
    if timeout is not None and (type(timeout) is not int or not 1 <= timeout <= MAX_TIMEOUT):
        raise ValueError(f"`timeout_seconds` must be a whole number from 1 to {MAX_TIMEOUT}")
    return Asked(call_id, text.strip(), tuple(choices), free_text, timeout)


class QuestionBridge:
    """The questions of one run that wait for the user; once there is one, the run stops
    before its next turn (after the scheduler it wraps, ``then``, had its say)."""

    __slots__ = ("_tools", "agent", "asked", "then")

    def __init__(self, tools: ToolManager) -> None:
        self._tools = tools
        self.agent: Agent | None = None
        self.then: Scheduler | None = None
        self.asked: dict[str, Asked] = {}

    @property
    def paused(self) -> bool:
        """Whether the run stopped to wait for answers."""
        return bool(self.asked)

    def holds(self, call: ToolCall) -> bool:
        """Whether ``call`` is a question to hold (it is then recorded); a malformed one is
        not held: the tool itself answers it with what is wrong."""
        if call.id in self.asked:
            return True
        if call.name != ASK_USER or self._tools.tool(call.name) is None:
            return False
        try:
            self.asked[call.id] = parse_question(call.id, call.arguments)
        except ValueError:
            return False
        return True

    def placeholder(self, call: ToolCall) -> ToolResult:
        return ToolResult(call.id, call.name, value=AWAITING_ANSWER)

    async def yield_(self, *, signal: AbortSignal | None = None) -> None:
        """The kit's scheduler seam, awaited before every turn after the first."""
        if self.then is not None:
            await self.then.yield_(signal=signal)
        if self.asked and self.agent is not None:
            self.agent.abort(QUESTION_REASON)
