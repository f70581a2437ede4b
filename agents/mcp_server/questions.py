"""Questions the model asks (``ask_user``), as an MCP client sees them.

As for held calls (``approvals``): a client that declares it can answer a form is asked, on
the 2026-07-28 revision in an input-required result (the call is retried with the answers), on
earlier ones with an ``elicitation/create`` request during the call. The form has one string
field, ``answer``: an ``enum`` of the choices when only they are taken. Accepting answers the
question (the run goes on, the model reads the answer); declining or dismissing leaves it
waiting. A client that cannot answer gets an ``isError`` result naming each question's id, to
answer in the chat or the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult

from conversations.models import Question
from conversations.questions import question_payload
from orkestrel.protocol import QuestionPayload

__all__ = [
    "answer_of",
    "asked_text",
    "question_form",
    "question_key",
    "question_request",
    "run_questions",
]


def run_questions(run_id: int) -> list[QuestionPayload]:
    """The questions of the paused run ``run_id`` that wait for an answer, in order."""
    rows = Question.objects.filter(run_id=run_id, status=Question.Status.PENDING).order_by("pk")
    return [question_payload(row) for row in rows]


def question_key(question: QuestionPayload) -> str:
    """The key of a question's input request in an input-required result."""
    return f"question-{question['id']}"


def question_form(question: QuestionPayload, agent: str) -> ElicitRequestFormParams:
    """The form asking the user one question."""
    field: dict[str, Any] = {"type": "string", "title": "Your answer"}
    choices = question["choices"]
    if choices and not question["free_text"]:
        field["enum"] = list(choices)
    elif choices:
        field["description"] = "One of: " + ", ".join(choices) + " (or your own words)."
    return ElicitRequestFormParams(
        message=f"The agent {agent!r} asks you (question {question['id']}): {question['question']}",
        requested_schema={
            "type": "object",
            "properties": {"answer": field},
            "required": ["answer"],
        },
    )


def question_request(question: QuestionPayload, agent: str) -> ElicitRequest:
    """The form as an input request of an input-required result."""
    return ElicitRequest(params=question_form(question, agent))


def answer_of(result: ElicitResult | None) -> str | None:
    """The answer a form gives; ``None`` when the user declined or dismissed it (or no answer
    came): the question keeps waiting."""
    if result is None or result.action != "accept":
        return None
    answer = (result.content or {}).get("answer")
    return answer if isinstance(answer, str) and answer.strip() else None


def asked_text(questions: Sequence[QuestionPayload], conversation: str, why: str) -> str:
    """Why the answer waits, naming each question's id and where to answer it."""
    asked = "; ".join(
        f"question {question['id']}: {question['question']!r}"
        + (f" (choices: {', '.join(question['choices'])})" if question["choices"] else "")
        for question in questions
    )
    return (
        f"{why} The agent waits for your answer to {asked}. Answer in orkestrel's chat, or "
        "with POST /api/questions/<id>/answer/; the agent then goes on in conversation "
        f"{conversation}."
    )
