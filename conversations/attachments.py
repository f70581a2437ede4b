"""Images attached to the next message, uploaded over HTTP and taken by its ``send``.

A websocket frame must stay under the server's message limit (1 MiB by default), so an image
goes up as a multipart upload first; the ``send`` frame (or the API's message) names it by id.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from typing import TypedDict

from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile

from orkestrel.core.files import decoded_size
from workspaces.services import image_mime, max_image_bytes

from .models import Attachment
from .services import User, get_conversation

__all__ = [
    "MAX_PENDING",
    "AttachedImage",
    "attach_image",
    "discard_attachments",
    "reattach",
    "resolve_attachments",
]

# Attachments waiting on one conversation (a message takes at most eight).
MAX_PENDING = 32


class AttachedImage(TypedDict):
    """An image waiting on a conversation for its next message: ``send.attachments`` names it
    by ``id``."""

    id: str
    mime: str
    size: int


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
        raise ValidationError({"file": f"The image is larger than {limit} bytes."})
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise ValidationError({"file": f"The image is larger than {limit} bytes."})
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


def _keys(ids: Sequence[str]) -> list[uuid.UUID]:
    try:
        return [uuid.UUID(value) for value in ids]
    except ValueError:
        raise LookupError("an attachment id is not a UUID") from None


def resolve_attachments(conversation_id: str, ids: Sequence[str]) -> tuple[str, ...]:
    """The base64 images of the conversation's attachments ``ids``, in that order.

    Raises ``LookupError`` naming an id that is unknown (sent already, or another
    conversation's).
    """
    if not ids:
        return ()
    keys = _keys(ids)
    rows = dict(
        Attachment.objects.filter(conversation_id=conversation_id, pk__in=keys).values_list(
            "pk", "data"
        )
    )
    missing = [str(key) for key in keys if key not in rows]
    if missing:
        raise LookupError(f"no attachment {missing[0]!r} waits on this conversation")
    return tuple(rows[key] for key in keys)


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
