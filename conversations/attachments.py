"""Images and documents attached to the next message, uploaded over HTTP and taken by its
``send``.

A websocket frame must stay under the server's message limit (1 MiB by default), so a file
goes up as a multipart upload first; the ``send`` frame (or the API's message) names it by id.
A document (PDF, DOCX, text: ``orkestrel.document_reader``) has its text extracted on upload.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from typing import TypedDict

from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile

from orkestrel.core.documents import Document
from orkestrel.core.files import decoded_size
from orkestrel.document_reader import DocumentRefused, max_document_bytes, read_document
from workspaces.services import image_mime, max_image_bytes

from .documents import document_preview
from .models import Attachment
from .services import User, get_conversation

__all__ = [
    "MAX_PENDING",
    "AttachedDocument",
    "AttachedImage",
    "attach_file",
    "attach_image",
    "discard_attachments",
    "reattach",
    "reattach_documents",
    "resolve_attachments",
    "resolve_documents",
]

# Attachments waiting on one conversation (a message takes at most eight).
MAX_PENDING = 32


class AttachedImage(TypedDict):
    """An image waiting on a conversation for its next message: ``send.attachments`` names it
    by ``id``."""

    id: str
    mime: str
    size: int


def _too_large(message: str) -> ValidationError:
    """A refusal of a file over its limit: ``code`` ``too_large`` (the chat answers ``413``)."""
    return ValidationError({"file": ValidationError(message, code="too_large")})


def attach_image(
    *, user: User, conversation_id: uuid.UUID | str, upload: UploadedFile[bytes]
) -> dict[str, object]:
    """Store an uploaded image (PNG, JPEG, GIF or WebP by its bytes, at most
    ``ORKESTREL["MAX_IMAGE_BYTES"]``) for the conversation's next message: ``{id, mime, size}``.

    Raises:
        ValidationError: ``{"file": ...}``: too large, not an image, too many waiting.
        Http404: the conversation is not the user's.
    """
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    limit = max_image_bytes()
    if upload.size is not None and upload.size > limit:
        raise _too_large(f"The image is larger than {limit} bytes.")
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise _too_large(f"The image is larger than {limit} bytes.")
    mime = image_mime(data)
    if mime is None:
        raise ValidationError({"file": "Attach a PNG, JPEG, GIF or WebP image."})
    if Attachment.objects.filter(conversation=conversation).count() >= MAX_PENDING:
        raise ValidationError({"file": f"At most {MAX_PENDING} images can wait to be sent."})
    row = Attachment.objects.create(
        conversation=conversation,
        data=base64.b64encode(data).decode("ascii"),
        mime=mime,
        size=len(data),
    )
    return {"id": str(row.pk), "mime": mime, "size": len(data)}


class AttachedDocument(TypedDict):
    """A document waiting on a conversation for its next message: its ``name``, ``pages``
    (a PDF's; ``None`` otherwise) and ``preview`` (the start of its first page's text)."""

    id: str
    mime: str
    size: int
    name: str
    pages: int | None
    preview: str


def _attached_document(row: Attachment) -> AttachedDocument:
    return {
        "id": str(row.pk),
        "mime": row.mime,
        "size": row.size,
        "name": row.name,
        "pages": row.pages,
        "preview": document_preview(row.texts or ()),
    }


def attach_file(
    *, user: User, conversation_id: uuid.UUID | str, upload: UploadedFile[bytes]
) -> dict[str, object]:
    """Store an uploaded image (as ``attach_image``) or document (PDF, DOCX, plain text,
    Markdown or CSV, at most ``ORKESTREL["MAX_DOCUMENT_BYTES"]`` and, a PDF,
    ``ORKESTREL["MAX_DOCUMENT_PAGES"]`` pages) for the conversation's next message.

    Raises:
        ValidationError: ``{"file": ...}``: too large, too many pages, unreadable, not a
            supported type, too many waiting.
        Http404: the conversation is not the user's.
    """
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    limit = max(max_image_bytes(), max_document_bytes())
    data = upload.read(limit + 1)
    upload.seek(0)
    if image_mime(data) is not None:
        return attach_image(user=user, conversation_id=conversation_id, upload=upload)
    try:
        document = read_document(upload.name or "", data, upload.content_type or "")
    except DocumentRefused as refused:
        if refused.code == "unsupported":
            raise ValidationError(
                {
                    "file": "Attach a PNG, JPEG, GIF or WebP image, or a PDF, DOCX, plain text, "
                    "Markdown or CSV document."
                }
            ) from None
        if refused.code == "too_large":
            raise _too_large(str(refused)) from None
        raise ValidationError({"file": str(refused)}) from None
    if Attachment.objects.filter(conversation=conversation).count() >= MAX_PENDING:
        raise ValidationError({"file": f"At most {MAX_PENDING} files can wait to be sent."})
    row = _document_row(str(conversation.pk), document)
    row.save()
    return dict(_attached_document(row))


def _document_row(conversation_id: str, document: Document) -> Attachment:
    return Attachment(
        conversation_id=conversation_id,
        data=document.data,
        mime=document.mime,
        size=document.size,
        name=document.name,
        texts=list(document.texts),
        pages=document.pages,
    )


def _keys(ids: Sequence[str]) -> list[uuid.UUID]:
    try:
        return [uuid.UUID(value) for value in ids]
    except ValueError:
        raise LookupError("an attachment id is not a UUID") from None


def resolve_attachments(conversation_id: str, ids: Sequence[str]) -> tuple[str, ...]:
    """The base64 images among the conversation's attachments ``ids``, in that order (its
    documents: ``resolve_documents``).

    Raises ``LookupError`` naming an id that is unknown (sent already, or another
    conversation's).
    """
    if not ids:
        return ()
    keys = _keys(ids)
    rows = {
        pk: (data, texts)
        for pk, data, texts in Attachment.objects.filter(
            conversation_id=conversation_id, pk__in=keys
        ).values_list("pk", "data", "texts")
    }
    missing = [str(key) for key in keys if key not in rows]
    if missing:
        raise LookupError(f"no attachment {missing[0]!r} waits on this conversation")
    return tuple(rows[key][0] for key in keys if rows[key][1] is None)


def resolve_documents(conversation_id: str, ids: Sequence[str]) -> tuple[Document, ...]:
    """The documents among the conversation's attachments ``ids``, in that order (unknown
    ids are ``resolve_attachments``' to refuse)."""
    if not ids:
        return ()
    keys = _keys(ids)
    rows = {
        row.pk: row
        for row in Attachment.objects.filter(
            conversation_id=conversation_id, pk__in=keys, texts__isnull=False
        )
    }
    return tuple(
        Document(
            name=row.name,
            mime=row.mime,
            data=row.data,
            size=row.size,
            texts=tuple(row.texts or ()),
            pages=row.pages,
        )
        for key in keys
        if (row := rows.get(key)) is not None
    )


def discard_attachments(conversation_id: str, ids: Sequence[str]) -> None:
    """Drop attachments a stored message took."""
    Attachment.objects.filter(conversation_id=conversation_id, pk__in=_keys(ids)).delete()


def _mime(image: str) -> str:
    # The signature is in the first 12 bytes (WebP's is the longest): 16 base64 characters.
    head = image[:16]
    return image_mime(base64.b64decode(head + "=" * (-len(head) % 4))) or "application/octet-stream"


def reattach(conversation_id: str, images: Sequence[str]) -> list[AttachedImage]:
    """Store base64 ``images`` (a message's, taken back) as the conversation's attachments
    again, in order, so a next message can name them; each ``{id, mime, size}``.

    No ``MAX_PENDING`` cap: each was accepted once already, and nothing taken back is lost.
    Call it in the transaction that took them, so they are never both gone and unattached.
    """
    rows = [
        Attachment(
            conversation_id=conversation_id, data=image, mime=_mime(image), size=decoded_size(image)
        )
        for image in images
    ]
    Attachment.objects.bulk_create(rows)
    return [{"id": str(row.pk), "mime": row.mime, "size": row.size} for row in rows]


def reattach_documents(
    conversation_id: str, documents: Sequence[Document]
) -> list[AttachedDocument]:
    """Store ``documents`` (a pending message's, taken back) as the conversation's attachments
    again, as ``reattach`` does images."""
    rows = [_document_row(conversation_id, document) for document in documents]
    Attachment.objects.bulk_create(rows)
    return [_attached_document(row) for row in rows]
