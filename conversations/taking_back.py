"""Taking pending messages back (seed 004's ``pendingPop``): their texts for the composer, and
their images waiting on the conversation again as uploaded attachments, so nothing sent is
lost on the way back.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from orkestrel.core.documents import to_document
from orkestrel.protocol import TakenAttachmentPayload

from .attachments import reattach, reattach_documents
from .models import Conversation
from .pending import take_pending

__all__ = ["Taken", "pop_pending"]


@dataclass(frozen=True, slots=True)
class Taken:
    """Pending messages taken back: their ``texts``, oldest first, and their images as
    ``attachments`` waiting on the conversation again (each names the text it came with)."""

    texts: list[str]
    attachments: list[TakenAttachmentPayload]


def pop_pending(user_id: int, conversation_id: str) -> Taken:
    """Take the user's pending messages back (``LookupError`` if the conversation is not
    theirs): the rows go and their images wait as attachments, in one transaction."""
    with transaction.atomic():
        if not Conversation.objects.filter(pk=conversation_id, owner_id=user_id).exists():
            raise LookupError(conversation_id)
        rows = take_pending(conversation_id)
        attachments: list[TakenAttachmentPayload] = [
            {**image, "message": index}
            for index, row in enumerate(rows)
            for image in reattach(conversation_id, row.images or ())
        ]
        # Their documents too, each after its message's images: nothing taken back is lost.
        attachments += [
            {**document, "message": index}
            for index, row in enumerate(rows)
            for document in reattach_documents(
                conversation_id, [to_document(value) for value in row.documents or ()]
            )
        ]
        return Taken([row.content for row in rows], attachments)
