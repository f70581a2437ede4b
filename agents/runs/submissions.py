"""What a person's submission becomes, read just before its run, for every front door alike.

``read_submission`` interprets it (``commands``, with the operators' prompt templates), puts
it behind messages still waiting with no run to take them (``AfterPending``: a failed run left
them, seed 004: "an error leaves them pending until a later run"), and drops an accidental
double submit (seed 004: "an identical user submission immediately
following another user submission is ignored"). A submission repeats the previous one when
it says the same (the same text once trimmed and expanded, the same images), on the same
user's same conversation, within ``ORKESTREL["DOUBLE_SUBMIT_SECONDS"]`` (2 s) of when that
one was accepted, while that one is still the latest user message (or the latest pending).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Model
from django.utils import timezone

from conversations.documents import document_payloads
from conversations.models import Conversation, Message, PendingMessage, Run
from conversations.pending import pending_list
from orkestrel.core.documents import Document
from orkestrel.protocol import MessagePayload, PendingPayload, message_payload
from orkestrel.statements import Names, Query, field_of, prep

from ..models import PromptTemplate
from .commands import Command, Continue, Say, interpret

__all__ = [
    "DOUBLE_SUBMIT_SECONDS",
    "AfterPending",
    "Declined",
    "Repeat",
    "find_repeat",
    "read_plain",
    "read_submission",
]

DOUBLE_SUBMIT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Repeat:
    """An identical submission right after the previous one: nothing is stored or run.

    ``message`` is the stored user message it repeats and ``run`` the run that message
    started; a repeat of a message waiting for the next run has ``pending`` (the queue).
    """

    message: MessagePayload | None
    run: int | None
    pending: list[PendingPayload] | None = None


@dataclass(frozen=True, slots=True)
class AfterPending:
    """A message (``content``) or a continue (``None``) while messages wait: it goes behind
    them, and the next run takes them all, in the order they were sent."""

    content: str | None


def read_submission(
    user_id: int,
    conversation_id: str,
    content: str,
    images: tuple[str, ...] = (),
    documents: tuple[Document, ...] = (),
) -> Command | Repeat | AfterPending:
    """What the user's submission asks for, ``Repeat``, or ``AfterPending`` (synchronous:
    call it in a thread; one to three small queries, one more for a ``/name``). Documents
    count as images do: a message with one is always sent."""
    command = interpret(
        content, images=bool(images or documents), expand=PromptTemplate.objects.expansion
    )
    if not isinstance(command, Say | Continue):
        return command
    latest = _LATEST_PENDING.rows([prep(Conversation, "id", conversation_id), user_id])
    if isinstance(command, Say):
        window = settings.ORKESTREL.get("DOUBLE_SUBMIT_SECONDS", DOUBLE_SUBMIT_SECONDS)
        repeat = find_repeat(
            user_id, conversation_id, command.content, images, window, latest, documents
        )
        if repeat is not None:
            return repeat
    if latest:
        return AfterPending(command.content if isinstance(command, Say) else None)
    return command


class Declined(Exception):
    """The submission is not the plain message a start was about to store (``read_plain``):
    ``read`` says what it is."""

    def __init__(self, read: Command | Repeat | AfterPending) -> None:
        super().__init__("not a plain message")
        self.read = read


def read_plain(
    user_id: int,
    conversation_id: str,
    content: str,
    images: tuple[str, ...] = (),
    documents: tuple[Document, ...] = (),
) -> None:
    """Nothing, if the submission is ``content`` itself to send (no command, no repeat, no
    message waiting, nothing to trim or expand); else ``Declined`` with what it is."""
    read = read_submission(user_id, conversation_id, content, images, documents)
    if not (isinstance(read, Say) and read.content == content):
        raise Declined(read)


def _latest_sql(
    n: Names, model: type[Model], columns: Sequence[str], where: str, order: str
) -> str:
    return (
        f"SELECT {n.columns(model, columns, 'x')} FROM {n.table(model)} x "
        f"INNER JOIN {n.table(Conversation)} c "
        f"ON {n.column(model, 'conversation', 'x')} = {n.column(Conversation, 'id', 'c')} "
        f"WHERE {n.column(model, 'conversation', 'x')} = %s "
        f"AND {n.column(Conversation, 'owner', 'c')} = %s{where} ORDER BY {order} LIMIT 1"
    )


# Each start reads these, in fixed SQL (``orkestrel.statements``).
_LATEST_PENDING = Query(
    lambda n: _latest_sql(
        n,
        PendingMessage,
        ("id", "content", "created"),
        "",
        f"{n.column(PendingMessage, 'created', 'x')} DESC, "
        f"{n.column(PendingMessage, 'id', 'x')} DESC",
    ),
    [None, None, field_of(PendingMessage, "created")],
)
# Read backwards through the (conversation, position) index.
_LATEST_USER_MESSAGE = Query(
    lambda n: _latest_sql(
        n,
        Message,
        ("id", "message_id", "content", "created"),
        f" AND {n.column(Message, 'role', 'x')} = %s AND {n.column(Message, 'hidden', 'x')} = %s",
        f"{n.column(Message, 'position', 'x')} DESC",
    ),
    [None, None, None, field_of(Message, "created")],
)


def find_repeat(
    user_id: int,
    conversation_id: str,
    content: str,
    images: tuple[str, ...],
    window: float,
    latest: list[tuple[Any, ...]] | None = None,
    documents: tuple[Document, ...] = (),
) -> Repeat | None:
    """The previous submission on the user's conversation if ``content`` and ``images``
    repeat it within ``window`` seconds of its acceptance, else ``None``; ``latest`` is the
    latest pending message's row when the caller has read it."""
    if window <= 0:
        return None
    cutoff = timezone.now() - timedelta(seconds=window)
    # Messages wait only behind a running answer (or one that failed), whose own message came
    # before them: the latest pending one, if any, is the latest submission.
    key = prep(Conversation, "id", conversation_id)
    found = _LATEST_PENDING.rows([key, user_id]) if latest is None else latest
    if found:
        pk, queued, created = found[0]
        if created < cutoff or queued != content:
            return None
        stored = PendingMessage.objects.filter(pk=pk).values_list("images", "documents")
        if list(stored[0][0] or ()) != list(images):
            return None
        if list(stored[0][1] or ()) != _plain(documents):
            return None
        return Repeat(None, None, pending_list(conversation_id))
    # The latest user message, read backwards through the (conversation, position) index.
    rows = _LATEST_USER_MESSAGE.rows([key, user_id, "user", False])
    if not rows:
        return None
    pk, message_id, said, created = rows[0]
    if created < cutoff or said != content:
        return None
    # Only now the images, which may be megabytes.
    kept, documented = Message.objects.filter(pk=pk).values_list("images", "documents")[0]
    if list(kept or ()) != list(images) or list(documented or ()) != _plain(documents):
        return None
    # The run opens in the transaction that stores its message, just before it.
    run = (
        Run.objects.filter(conversation_id=conversation_id, created__lte=created)
        .order_by("-created", "-id")
        .values_list("id", flat=True)
        .first()
    )
    payload = message_payload(
        id=message_id,
        role="user",
        content=content,
        images_count=len(images),
        documents=document_payloads(documents),
    )
    return Repeat(payload, run)


def _plain(documents: tuple[Document, ...]) -> list[dict[str, Any]]:
    """``documents`` as their stored JSON, to compare with a stored message's."""
    return [document.to_dict() for document in documents]
