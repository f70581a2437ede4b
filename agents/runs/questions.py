"""Answering the model's questions: store the answer, tell every tab, and go on.

The run's side of ``ask_user`` is ``agents.runtime.questions``, the rows' side
``conversations.questions``; this is the front doors' one seam (the chat's ``answer`` frame,
``POST /api/questions/{id}/answer/``, an MCP client's form), as ``RunService.decide_run`` is
for approvals: once nothing of the paused run waits any more, the next run starts and gives
the model the answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conversations.questions import answer_question, pending_questions
from orkestrel.db import in_thread
from orkestrel.protocol import QuestionFrame, QuestionPayload, encode

from .manager import RunManager

__all__ = ["QuestionAnswered", "announce_questions", "answer"]


@dataclass(frozen=True, slots=True)
class QuestionAnswered:
    """An answered question, and the run that goes on after it (``None``: something else
    of its run still waits)."""

    question: QuestionPayload
    continued_by: int | None


async def answer(
    manager: RunManager, *, user_id: int, username: str, question_id: int, answer: Any
) -> QuestionAnswered:
    """Answer a question of the user's; once its run waits for nothing more, the run goes on.
    ``LookupError`` for another user's (or no) question, ``QuestionRefused`` for one answered
    already or an answer that does not fit."""
    outcome = await in_thread(answer_question)(
        question_id, answer, user_id=user_id, username=username
    )
    await announce_questions(manager, outcome.conversation_id, answered=outcome.question)
    continued: int | None = None
    if outcome.ready:
        manager.sweeper.ensure()
        resumed = await manager.resume(outcome.owner_id, outcome.conversation_id, outcome.run_id)
        continued = resumed.run_id if resumed is not None else None
    return QuestionAnswered(outcome.question, continued)


async def announce_questions(
    manager: RunManager, conversation_id: str, answered: QuestionPayload | None = None
) -> None:
    """Tell every tab of the conversation which of its questions still wait."""
    waiting = await in_thread(pending_questions)(conversation_id)
    manager.publish(conversation_id, encode(QuestionFrame(questions=waiting, answered=answered)))
