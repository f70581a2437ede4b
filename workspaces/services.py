"""Use cases of the chat UI's workspace panel: list, read and upload the files of the workspace
attached to a conversation.

Every function takes the acting ``user`` and a ``conversation_id``; ownership is checked through
``conversations.services.get_conversation`` (``Http404`` for someone else's conversation). An
upload is validated completely before anything is written: a rejected file stores nothing, not
even the workspace it would have created.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any, TypedDict

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.http import Http404

from conversations.models import Conversation
from conversations.services import User, get_conversation
from orkestrel.core import BinaryContent, BinaryMIME, create_file
from orkestrel.core import Workspace as KitWorkspace

from .models import Workspace, WorkspaceFile
from .stores import DjangoWorkspaceStore

__all__ = [
    "MAX_TEXT_BYTES",
    "FileInfo",
    "ensure_workspace",
    "image_mime",
    "list_files",
    "max_image_bytes",
    "read_file",
    "read_image",
    "upload_file",
]

MAX_TEXT_BYTES = 1024 * 1024
MAX_PATH = WorkspaceFile._meta.get_field("path").max_length or 1024
# Extensions that promise a raster image: such a file must really be one.
IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp"})


class FileInfo(TypedDict):
    path: str
    kind: str  # "text" or "image"
    language: str
    mime: str
    size: int
    lines: int
    state: str


def max_image_bytes() -> int:
    """The largest image accepted (``ORKESTREL["MAX_IMAGE_BYTES"]``)."""
    return int(getattr(settings, "ORKESTREL", {}).get("MAX_IMAGE_BYTES", 5 * 1024 * 1024))


def image_mime(data: bytes) -> BinaryMIME | None:
    """The image type ``data`` starts with (PNG, JPEG, GIF or WebP), by magic bytes."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _workspace(conversation: Conversation, user: User) -> Workspace | None:
    workspace = conversation.workspace
    if workspace is not None and workspace.owner_id != user.pk:
        # A link made by hand in the admin must not expose another user's files.
        raise PermissionDenied("This workspace belongs to another user.")
    return workspace


def ensure_workspace(*, user: User, conversation_id: uuid.UUID | str) -> Workspace:
    """The conversation's workspace, created and linked when it has none."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    with transaction.atomic():
        # Lock the conversation so two first uploads create one workspace, not two.
        # No ``select_related``: PostgreSQL cannot lock the nullable side of an outer join.
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        workspace = _workspace(locked, user)
        if workspace is None:
            workspace = Workspace.objects.create(owner_id=user.pk, name=locked.title or "Workspace")
            # ``update`` rather than ``save``: linking a workspace is not conversation activity.
            Conversation.objects.filter(pk=locked.pk).update(workspace=workspace)
    return workspace


def _info(row: dict[str, Any]) -> FileInfo:
    return {
        "path": row["path"],
        "kind": "image" if row["mime"] else "text",
        "language": row["language"],
        "mime": row["mime"],
        "size": row["size"],
        "lines": row["lines"],
        "state": row["state"],
    }


_INFO_COLUMNS = ("path", "language", "mime", "size", "lines", "state")


def list_files(*, user: User, conversation_id: uuid.UUID | str) -> list[FileInfo]:
    """The files of the conversation's workspace in insertion order (empty without one)."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    workspace = _workspace(conversation, user)
    if workspace is None:
        return []
    rows = (
        WorkspaceFile.objects.filter(workspace=workspace)
        .order_by("position")
        .values(*_INFO_COLUMNS)
    )
    return [_info(row) for row in rows]


def _row(user: User, conversation_id: uuid.UUID | str, path: str) -> WorkspaceFile:
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    workspace = _workspace(conversation, user)
    row = (
        WorkspaceFile.objects.filter(workspace=workspace, path=path).first()
        if workspace is not None
        else None
    )
    if row is None:
        raise Http404("No such file.")
    return row


def read_file(*, user: User, conversation_id: uuid.UUID | str, path: str) -> dict[str, Any]:
    """One file's description; a text file's includes its ``text`` (``Http404`` if missing)."""
    row = _row(user, conversation_id, path)
    info: dict[str, Any] = dict(_info({name: getattr(row, name) for name in _INFO_COLUMNS}))
    if row.text is not None:
        info["text"] = row.text
    return info


def read_image(*, user: User, conversation_id: uuid.UUID | str, path: str) -> tuple[bytes, str]:
    """An image file's bytes and MIME type (``Http404`` if missing or not an image)."""
    row = _row(user, conversation_id, path)
    if row.data is None:
        raise Http404("Not an image.")
    return base64.b64decode(row.data), row.mime


def _clean_name(name: str) -> str:
    # Browsers send a bare name, but a crafted request may not: keep the last segment only,
    # without control characters (NUL is forbidden in a workspace path).
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip()
    if base in ("", ".", ".."):
        raise ValidationError({"file": "The file needs a name."})
    if len(base) > MAX_PATH:
        raise ValidationError({"file": f"Keep the file name under {MAX_PATH + 1} characters."})
    return base


def _read(upload: UploadedFile, limit: int) -> bytes:
    if upload.size is not None and upload.size > limit:
        raise ValidationError({"file": _too_large(limit)})
    chunks: list[bytes] = []
    total = 0
    for chunk in upload.chunks():
        total += len(chunk)
        if total > limit:
            raise ValidationError({"file": _too_large(limit)})
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> str:
    return f"The file is too large (the limit is {_human(limit)})."


def _human(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):g} MB"
    if size >= 1024:
        return f"{size / 1024:g} KB"
    return f"{size} bytes"


def _decode_text(data: bytes, name: str) -> str:
    if b"\x00" in data:
        raise ValidationError({"file": f"{name!r} is a binary file; upload text or an image."})
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(
            {"file": f"{name!r} is not UTF-8 text; upload text or an image."}
        ) from None
    return text.removeprefix("\ufeff")


def _claims_image(name: str, content_type: str | None) -> bool:
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    claimed_type = (content_type or "").split(";")[0].strip().lower()
    return extension in IMAGE_EXTENSIONS or claimed_type in {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
    }


def upload_file(*, user: User, conversation_id: uuid.UUID | str, upload: UploadedFile) -> FileInfo:
    """Store an uploaded text file (UTF-8, at most 1 MB) or image (PNG, JPEG, GIF or WebP by
    its bytes, at most ``ORKESTREL["MAX_IMAGE_BYTES"]``) in the conversation's workspace.

    The file is named after the upload; an existing file of that name is replaced. The
    workspace is created and linked when the conversation has none.

    Raises:
        ValidationError: ``{"file": ...}``: too large, not UTF-8 text, or named or typed as an
            image without being one. Nothing is stored.
        Http404: the conversation is not the user's.
    """
    get_conversation(user=user, conversation_id=conversation_id)  # ownership first
    name = _clean_name(upload.name or "")
    image_limit = max_image_bytes()
    data = _read(upload, max(MAX_TEXT_BYTES, image_limit))
    mime = image_mime(data)
    if mime is not None:
        if len(data) > image_limit:
            raise ValidationError({"file": _too_large(image_limit)})
        text = None
    else:
        if _claims_image(name, upload.content_type):
            raise ValidationError({"file": f"{name!r} is not a PNG, JPEG, GIF or WebP image."})
        if len(data) > MAX_TEXT_BYTES:
            raise ValidationError({"file": _too_large(MAX_TEXT_BYTES)})
        text = _decode_text(data, name)
    with transaction.atomic():
        workspace = ensure_workspace(user=user, conversation_id=conversation_id)
        _write(user, str(workspace.pk), name, text, data, mime)
    row = WorkspaceFile.objects.filter(workspace=workspace, path=name).values(*_INFO_COLUMNS)
    return _info(row.get())


def _write(
    user: User, key: str, path: str, text: str | None, data: bytes, mime: BinaryMIME | None
) -> None:
    """Write one file through the kit's ``Workspace`` and the Django store."""
    store = DjangoWorkspaceStore(owner=user.pk)
    snapshot = store.get_sync(key) or {"id": key, "files": []}
    workspace = KitWorkspace(id=key, seed=snapshot["files"])
    if text is not None:
        workspace.write(path, text)  # keeps a replaced file's language, else infers it
    else:
        assert mime is not None
        encoded = base64.b64encode(data).decode("ascii")
        existing = workspace.file(path)
        image = create_file(
            path, BinaryContent(encoded, mime), "modified" if existing else "created"
        )
        # The kit's edit surface mints text only; an image is seated by re-seeding.
        files = [image if file.path == path else file for file in workspace.files()]
        if existing is None:
            files.append(image)
        workspace = KitWorkspace(id=key, seed=files)
    store.set_sync(workspace.snapshot())
