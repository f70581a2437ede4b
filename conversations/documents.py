"""Documents on messages as the transcript shows them: name, type, size, pages, a preview.

The bytes and the full text stay in the message (``Message.documents``); a page, a frame or an
API answer carries this short description instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from orkestrel.core.documents import Document, to_document
from orkestrel.protocol import DocumentPayload

from .branches import Redo
from .models import Message

__all__ = ["PREVIEW_CHARS", "document_payloads", "document_preview", "edited_documents"]

# How much of a document's first page its preview shows.
PREVIEW_CHARS = 280


def document_preview(texts: Sequence[str]) -> str:
    """The start of the first page's text, on one line ("" when it has none)."""
    first = " ".join((texts[0] if texts else "").split())
    return first if len(first) <= PREVIEW_CHARS else first[: PREVIEW_CHARS - 1] + "…"


def document_payloads(
    documents: Sequence[Document | Mapping[str, Any]] | None,
) -> list[DocumentPayload]:
    """A message's documents (kit documents, or their stored JSON) as the transcript shows
    them: name, type, size, pages and a preview, never their bytes."""
    shown: list[DocumentPayload] = []
    for value in documents or ():
        document = to_document(value)
        shown.append(
            {
                "name": document.name,
                "mime": document.mime,
                "size": document.size,
                "pages": document.pages,
                "preview": document_preview(document.texts),
            }
        )
    return shown


def edited_documents(conversation_id: str | uuid.UUID, redo: Redo) -> tuple[Document, ...]:
    """The documents of the user message an ``edit`` replaces (none for a regenerate): the
    edited message keeps them, as it keeps its images. Read before the edit hides it."""
    if redo.kind != "edit":
        return ()
    stored = (
        Message.objects.filter(
            conversation_id=conversation_id, message_id=redo.message, section__isnull=True
        )
        .values_list("documents", flat=True)
        .first()
    )
    return tuple(to_document(value) for value in stored or ())
