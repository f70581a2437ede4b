"""Questions the model asks the user: storing them, answering them, taking the answers.

The database side of the ``ask_user`` tool (``agents.runtime.questions`` is the run's side),
shaped like approvals (``conversations.approvals``): a run that asked stores one ``Question``
per question and settles as ``awaiting_input``; an answer (from the chat, the API or an MCP
client) is a row update; the run that goes on takes the answers with the approvals'
decisions (``take_decisions``), in the transaction that opens it, so an answer is given once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from orkestrel.protocol import QuestionPayload
from orkestrel.refusals import Refusal

from .approvals import ApprovalsPending, Decided, run_ready
from .models import Question, Run

__all__ = [
    "Asked",
    "Answered",
    "QuestionRefused",
    "answer_question",
    "ask_questions",
    "check_answer",
    "expire_due_questions",
    "pending_questions",
    "question_payload",
    "take_answers",
    "user_questions",
]

# The tool that asks (``agents.runtime.builtins.ask_user``'s name; conversations sit below it).
ASK_USER = "ask_user"
# What the model reads when nobody answered in time (the call's result).
NO_ANSWER = (
    "no answer came: the user did not answer within {seconds} seconds; go on without it "
    "(say what you assumed)"
)


@dataclass(frozen=True, slots=True)
class Asked:
    """A question a run asked, as the model put it (checked already)."""

    call_id: str
    text: str
    choices: tuple[str, ...]
    free_text: bool
    timeout: int | None


@dataclass(frozen=True, slots=True)
class Answered:
    """What an answer did: the updated question, and whether its run may now go on."""

    question: QuestionPayload
    conversation_id: str
    run_id: int
    owner_id: int
    ready: bool


class QuestionRefused(Refusal):
    """An answer that cannot be taken: ``answered`` already (or expired), or ``invalid`` (not
    one of the choices where only they are allowed, or blank)."""

    _STATUS = {"answered": 409, "invalid": 400}

    def __init__(self, code: Literal["answered", "invalid"], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status_code = self._STATUS[code]
        self.field = "answer" if code == "invalid" else None


def question_payload(row: Question) -> QuestionPayload:
    """One question as clients see it (frames, the API)."""
    return {
        "id": row.pk,
        "call_id": row.tool_call_id,
        "question": row.text,
        "choices": list(row.choices or []),
        "free_text": row.free_text,
        "status": row.status,
        "answer": row.answer if row.status == Question.Status.ANSWERED else None,
        "run": row.run_id,
        "conversation": str(row.conversation_id),
        "created": row.created.isoformat(),
        "expires": row.expires.isoformat() if row.expires is not None else None,
        "answered": row.answered.isoformat() if row.answered is not None else None,
        "answered_by": row.answered_by.get_username() if row.answered_by is not None else None,
    }


def user_questions(user_id: int, status: str | None = "pending") -> QuerySet[Question]:
    """The questions on the user's conversations (pending ones unless ``status`` says else;
    ``None``: all), newest first."""
    rows = Question.objects.filter(conversation__owner_id=user_id).select_related("answered_by")
    if status is not None:
        rows = rows.filter(status=status)
    return rows.order_by("-created", "-pk")


def pending_questions(conversation_id: str) -> list[QuestionPayload]:
    """The conversation's questions that wait for an answer, in the model's order."""
    rows = Question.objects.filter(
        conversation_id=conversation_id, status=Question.Status.PENDING
    ).order_by("pk")
    return [question_payload(row) for row in rows]


def ask_questions(
    run_id: int, conversation_id: str, asked: Sequence[Asked]
) -> list[QuestionPayload]:
    """Store the run's questions (each with its own timeout, if any); their payloads."""
    now = timezone.now()
    rows = Question.objects.bulk_create(
        [
            Question(
                run_id=run_id,
                conversation_id=conversation_id,
                tool_call_id=item.call_id,
                text=item.text,
                choices=list(item.choices),
                free_text=item.free_text,
                expires=now + timedelta(seconds=item.timeout) if item.timeout else None,
            )
            for item in asked
        ]
    )
    return [question_payload(row) for row in rows]


def check_answer(row: Question, answer: Any) -> str:
    """The answer to store, or ``QuestionRefused("invalid")``: a non-blank string, one of the
    choices unless free text is allowed."""
    if not isinstance(answer, str) or not answer.strip():
        raise QuestionRefused("invalid", "the answer must be a non-blank string")
    if len(answer) > 10_000:
        raise QuestionRefused("invalid", "the answer must be at most 10000 characters")
    choices = list(row.choices or [])
    if answer in choices:
        return answer
    if choices and not row.free_text:
        raise QuestionRefused("invalid", f"the answer must be one of the choices: {choices}")
    return answer.strip()


def answer_question(question_id: int, answer: Any, *, user_id: int, username: str) -> Answered:
    """Answer the user's pending question ``question_id``. ``LookupError`` when the user cannot
    see it (another user's: a 404); ``QuestionRefused`` when it is answered already, expired,
    or the answer does not fit."""
    with transaction.atomic():
        row = (
            Question.objects.select_for_update(of=("self",))
            .filter(pk=question_id, conversation__owner_id=user_id)
            .first()
        )
        if row is None:
            raise LookupError(question_id)
        if row.status != Question.Status.PENDING:
            raise QuestionRefused("answered", f"this question was {row.status} already")
        row.answer = check_answer(row, answer)
        row.status = Question.Status.ANSWERED
        row.answered_by_id = user_id
        row.answered = timezone.now()
        row.save(update_fields=["answer", "status", "answered_by", "answered"])
        ready = run_ready(row.run_id)
        owner_id = Run.objects.filter(pk=row.run_id).values_list(
            "conversation__owner_id", flat=True
        )[0]
    row.answered_by = None
    payload = question_payload(row)
    payload["answered_by"] = username
    return Answered(payload, str(row.conversation_id), row.run_id, owner_id, ready)


def expire_due_questions() -> int:
    """Close the pending questions whose time ran out (the model reads that no answer came);
    how many. Their runs go on in the sweep (``ready_runs``)."""
    now = timezone.now()
    return Question.objects.filter(status=Question.Status.PENDING, expires__lt=now).update(
        status=Question.Status.EXPIRED, answered=now
    )


def no_answer_text(row: Question) -> str:
    """What the model reads for a question nobody answered in time."""
    seconds = round((row.expires - row.created).total_seconds()) if row.expires else 0
    return NO_ANSWER.format(seconds=seconds)


def take_answers(run_id: int) -> list[Decided]:
    """The answers to the paused run's questions, as results its calls get without running
    (after ``take_decisions`` closed the run, in the same transaction). ``ApprovalsPending``
    when a question still waits."""
    rows = list(
        Question.objects.select_for_update(of=("self",))
        .filter(run_id=run_id, applied=False)
        .select_related("answered_by")
        .order_by("pk")
    )
    if any(row.status == Question.Status.PENDING for row in rows):
        raise ApprovalsPending(run_id)
    Question.objects.filter(pk__in=[row.pk for row in rows]).update(applied=True)
    return [
        Decided(
            call_id=row.tool_call_id,
            tool=ASK_USER,
            arguments={"question": row.text},
            approved=True,
            reason="",
            by=row.answered_by.get_username() if row.answered_by is not None else "",
            expired=row.status == Question.Status.EXPIRED,
            answer=answer_result(row),
        )
        for row in rows
    ]


def answer_result(row: Question) -> dict[str, Any]:
    """The result the model reads for an answered or expired question."""
    if row.status == Question.Status.ANSWERED:
        return {"answer": row.answer}
    return {"answer": None, "note": no_answer_text(row)}
