"""Questions the model asks (``ask_user``), as the ``/v1`` APIs answer a run that waits on one.

Neither API has an item for a question to the user, so a run that pauses on one is never an
empty success: ``409`` ``input_required`` (as ``approval_required`` for a held call) names
each question, its choices, and where to answer it. The question is stored and waits like any
other: ``POST /api/questions/{id}/answer/`` (or the chat) answers it, and the run goes on in
its conversation.
"""

from __future__ import annotations

from collections.abc import Sequence

from conversations.approvals import pending_approvals
from conversations.models import Question, Run
from conversations.questions import pending_questions, question_payload
from orkestrel.protocol import QuestionPayload

from .errors import OpenAIError

__all__ = ["INPUT_REQUIRED", "conversation_asks", "input_required", "run_asks", "run_questions"]

INPUT_REQUIRED = "input_required"


def run_questions(run_id: int) -> list[QuestionPayload]:
    """The questions the run ``run_id`` asked that wait for an answer (all it asked, when
    every one was answered meanwhile), in the model's order."""
    rows = Question.objects.filter(run_id=run_id).select_related("answered_by").order_by("pk")
    asked = [question_payload(row) for row in rows]
    return [question for question in asked if question["status"] == "pending"] or asked


def _asked(question: QuestionPayload) -> str:
    choices = question["choices"]
    offered = ""
    if choices:
        offered = f" (choices: {', '.join(choices)}"
        offered += "; or your own words)" if question["free_text"] else ")"
    return f"question {question['id']}: {question['question']!r}{offered}"


def _asking_text(
    questions: Sequence[QuestionPayload], approvals: Sequence[int], conversation_id: str
) -> str:
    where = f"the run then goes on in conversation {conversation_id}."
    if not questions:
        return f"The agent waits for your answer to its question (GET /api/questions/); {where}"
    asked = "; ".join(_asked(question) for question in questions)
    text = (
        f"The agent asks you and waits for the answer ({asked}). Answer it with "
        f'POST /api/questions/{questions[0]["id"]}/answer/ {{"answer": "..."}} or in the chat; '
        f"{where}"
    )
    if approvals:
        listed = ", ".join(str(approval) for approval in approvals)
        text += (
            f" A tool call waits for your approval too (approval {listed}: "
            f"POST /api/approvals/{approvals[0]}/decide/)."
        )
    return text


def input_required(
    questions: Sequence[QuestionPayload], conversation_id: str, param: str | None = None
) -> OpenAIError:
    """The ``409`` of a request whose run waits for the user's answers, naming each
    question (and any approval the same conversation waits for)."""
    approvals = [approval["id"] for approval in pending_approvals(conversation_id)]
    return OpenAIError(
        409,
        _asking_text(questions, approvals, conversation_id),
        param=param,
        code=INPUT_REQUIRED,
    )


def run_asks(run_id: int) -> OpenAIError:
    """The ``409`` of a request whose run ``run_id`` paused on questions."""
    conversation_id = Run.objects.values_list("conversation_id", flat=True).get(pk=run_id)
    return input_required(run_questions(run_id), str(conversation_id))


def conversation_asks(conversation_id: str) -> OpenAIError | None:
    """The ``409`` of a request into a conversation that waits for the user's answers;
    ``None`` when none of its questions waits."""
    waiting = pending_questions(conversation_id)
    if not waiting:
        return None
    return input_required(waiting, conversation_id, param="previous_response_id")
