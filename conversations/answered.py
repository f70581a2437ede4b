"""Which model wrote each answer: read from the runs of the conversation.

An answer is stored while its run goes on (each commit inserts the new messages, once), so
the run that wrote an assistant message is the one whose span (``created`` to ``finished``)
holds the message's ``created``. Runs record the model as called (``Run.model``) and as the
provider reported it (``Run.response_model``); an answer of no such run (an import, a fork's
copy, a run that recorded no model) names none.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Sequence

from django.db.models import Q

from orkestrel.protocol import AnsweredPayload

from .models import Message, Run

__all__ = ["answered_by"]


def answered_by(
    conversation_id: uuid.UUID | str, rows: Sequence[Message]
) -> dict[str, AnsweredPayload]:
    """The model of each assistant message among ``rows``, by message id (one query)."""
    answers = [row for row in rows if row.role == Message.Role.ASSISTANT]
    if not answers:
        return {}
    first = min(row.created for row in answers)
    runs = list(
        Run.objects.filter(conversation_id=conversation_id)
        .exclude(model="")
        .filter(Q(finished__isnull=True) | Q(finished__gte=first))
        .order_by("created", "id")
        .values_list("created", "finished", "model", "response_model")
    )
    starts = [run[0] for run in runs]
    found: dict[str, AnsweredPayload] = {}
    for row in answers:
        index = bisect.bisect_right(starts, row.created) - 1
        if index < 0:
            continue
        _, finished, model, reported = runs[index]
        if finished is None or row.created <= finished:
            found[row.message_id] = {"model": model, "response_model": reported}
    return found
