"""Pending messages: what a person sends while an answer is running, kept until the next run.

As seed 004's ``pending``: stored at once (durable, shown in every tab), merged into one user
message when a run takes them, or taken back into the composer (``pendingPop``): their texts,
and their images as the conversation's attachments again, for the next message to name.
"""

from __future__ import annotations

from typing import Any

from orkestrel.core import Message, mint_id
from orkestrel.core.documents import Document, to_document
from orkestrel.protocol import PendingPayload
from orkestrel.refusals import Refusal
from orkestrel.statements import Query, prep

from .models import Conversation, PendingMessage

__all__ = [
    "MAX_PENDING",
    "PendingFull",
    "has_pending",
    "merged",
    "pending_list",
    "queue_pending",
    "take_pending",
]


def _payload(row: PendingMessage) -> PendingPayload:
    return {
        "id": row.pk,
        "content": row.content,
        "images_count": len(row.images or []),
        "nonce": row.nonce,
    }


# At most this many messages wait in one conversation: each is shown in every tab.
MAX_PENDING = 50


class PendingFull(RuntimeError, Refusal):
    """The conversation already has ``MAX_PENDING`` messages waiting."""

    code = "too_many_pending"
    status_code = 429


# Fixed SQL (``orkestrel.statements``): every run asks as it ends.
_ANY = Query(
    lambda n: (
        f"SELECT 1 FROM {n.table(PendingMessage)} "
        f"WHERE {n.column(PendingMessage, 'conversation')} = %s LIMIT 1"
    )
)


def has_pending(conversation_id: str) -> bool:
    """Whether messages wait in the conversation for its next run."""
    return bool(_ANY.rows([prep(PendingMessage, "conversation", conversation_id)]))


def pending_list(conversation_id: Any) -> list[PendingPayload]:
    """The conversation's pending messages, oldest first."""
    rows = PendingMessage.objects.filter(conversation_id=conversation_id).order_by("created", "id")
    return [_payload(row) for row in rows]


def queue_pending(
    user_id: int,
    conversation_id: str,
    content: str,
    images: tuple[str, ...],
    nonce: str | None,
    documents: tuple[Document, ...] = (),
) -> list[PendingPayload]:
    """Queue a message on the user's conversation (``LookupError`` if not theirs); the list."""
    if not Conversation.objects.filter(pk=conversation_id, owner_id=user_id).exists():
        raise LookupError(conversation_id)
    if PendingMessage.objects.filter(conversation_id=conversation_id).count() >= MAX_PENDING:
        raise PendingFull(f"{MAX_PENDING} messages are waiting already; wait for the answer")
    PendingMessage.objects.create(
        conversation_id=conversation_id,
        content=content,
        images=list(images),
        documents=[document.to_dict() for document in documents],
        nonce=nonce or "",
    )
    return pending_list(conversation_id)


def take_pending(conversation_id: str) -> list[PendingMessage]:
    """Remove and return the conversation's pending messages, oldest first (call it inside
    the transaction that uses them: a rollback puts them back)."""
    rows = list(
        PendingMessage.objects.select_for_update()
        .filter(conversation_id=conversation_id)
        .order_by("created", "id")
    )
    PendingMessage.objects.filter(pk__in=[row.pk for row in rows]).delete()
    return rows


def merged(rows: list[PendingMessage]) -> Message | None:
    """The pending messages as one user message, in the order they were sent."""
    if not rows:
        return None
    text = "\n\n".join(row.content for row in rows if row.content)
    images = tuple(image for row in rows for image in (row.images or []))
    documents = tuple(to_document(document) for row in rows for document in (row.documents or []))
    return Message(mint_id(), "user", text, images=images or None, documents=documents or None)
