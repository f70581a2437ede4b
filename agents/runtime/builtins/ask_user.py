"""The ``ask_user`` built-in: the model asks the person it works for, and waits for the answer.

In a chat run the question bridge (``agents.runtime.questions``) holds the call before this
handler runs: the run pauses (``awaiting_input``), the question shows where approvals do, and
the answer comes back as the call's result. The handler itself runs only where nobody can
answer (a job, a sub-agent): it refuses, in words the model can act on. Seed 004: an agent's
``interact`` capability is false for children.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conversations.questions import ASK_USER
from orkestrel.core import Tool, create_tool

from ..questions import MAX_CHOICES, MAX_TIMEOUT, parse_question
from ..registry import ToolContext

__all__ = ["DESCRIPTION", "NAME", "PARAMETERS", "REFUSAL", "SAFE", "create_ask_user_tool"]

NAME = ASK_USER
# Asking changes nothing: a read-only conversation may ask too.
SAFE = True
REFUSAL = (
    "nobody can answer here: this agent runs without a person to ask (a job or a sub-agent). "
    "Decide on your own and say what you assumed."
)

DESCRIPTION = (
    "Ask the user a question and wait for the answer; use it when you cannot go on without "
    "a decision or fact only the user has. Offer `choices` when the answer is one of a few "
    "options (`free_text` true also takes another answer); without choices the user types "
    'the answer. The result is `{"answer": ...}`; `answer` is null with a `note` when no '
    "answer came in `timeout_seconds`. Ask one thing at a time, briefly."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "description": "What to ask the user."},
        "choices": {
            "type": ["array", "null"],
            "items": {"type": "string", "minLength": 1},
            "maxItems": MAX_CHOICES,
            "description": "The answers to offer (leave out for a free answer).",
        },
        "free_text": {
            "type": ["boolean", "null"],
            "description": "Whether an answer outside `choices` is taken (default: only when "
            "there are no choices).",
        },
        "timeout_seconds": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_TIMEOUT,
            "description": "How long to wait for the answer (default: until it comes).",
        },
    },
    "required": ["question"],
}


def create_ask_user_tool(context: ToolContext) -> Tool:
    """The ``ask_user`` tool of a run with nobody to answer: it checks the question and
    refuses (a chat run's bridge holds well-formed calls before they reach it)."""

    async def execute(arguments: Mapping[str, Any]) -> Any:
        parse_question("", arguments)  # a malformed question: the model reads what is wrong
        return {"answer": None, "refused": REFUSAL}

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
