"""Files of one workspace: list, read, and validate and store an upload.

These take a ``Workspace`` row whose ownership the caller checked (``conversations.files``
resolves it from a conversation the user owns). An upload is validated completely
(``check_upload``) before anything is written: a rejected file stores nothing.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, TypedDict

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404

from orkestrel.core import BinaryContent, BinaryMIME, create_file
from orkestrel.core import Workspace as KitWorkspace

from .models import Workspace, WorkspaceFile
from .stores import DjangoWorkspaceStore

__all__ = [
    "MAX_TEXT_BYTES",
    "CheckedUpload",
    "FileInfo",
    "check_upload",
    "image_mime",
    "list_files",
    "max_image_bytes",
    "read_file",
    "read_image",
    "store_upload",
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


def list_files(workspace: Workspace | None) -> list[FileInfo]:
    """The files of ``workspace`` in insertion order (empty without one)."""
    if workspace is None:
        return []
    rows = (
        WorkspaceFile.objects.filter(workspace=workspace)
        .order_by("position")
        .values(*_INFO_COLUMNS)
    )
    return [_info(row) for row in rows]


def _row(workspace: Workspace | None, path: str) -> WorkspaceFile:
    row = (
        WorkspaceFile.objects.filter(workspace=workspace, path=path).first()
        if workspace is not None
        else None
    )
    if row is None:
        raise Http404("No such file.")
    return row


def read_file(workspace: Workspace | None, path: str) -> dict[str, Any]:
    """One file's description; a text file's includes its ``text`` (``Http404`` if missing)."""
    row = _row(workspace, path)
    info: dict[str, Any] = dict(_info({name: getattr(row, name) for name in _INFO_COLUMNS}))
    if row.text is not None:
        info["text"] = row.text
    return info


def read_image(workspace: Workspace | None, path: str) -> tuple[bytes, str]:
    """An image file's bytes and MIME type (``Http404`` if missing or not an image)."""
    row = _row(workspace, path)
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


@dataclass(frozen=True, slots=True)
class CheckedUpload:
    """An upload that passed every check: its file name and content, ready to store."""

    name: str
    text: str | None
    data: bytes
    mime: BinaryMIME | None


def check_upload(upload: UploadedFile) -> CheckedUpload:
    """Validate an uploaded text file (UTF-8, at most 1 MB) or image (PNG, JPEG, GIF or WebP by
    its bytes, at most ``ORKESTREL["MAX_IMAGE_BYTES"]``), named after the upload.

    Raises:
        ValidationError: ``{"file": ...}``: too large, not UTF-8 text, or named or typed as an
            image without being one.
    """
    name = _clean_name(upload.name or "")
    image_limit = max_image_bytes()
    data = _read(upload, max(MAX_TEXT_BYTES, image_limit))
    mime = image_mime(data)
    if mime is not None:
        if len(data) > image_limit:
            raise ValidationError({"file": _too_large(image_limit)})
        return CheckedUpload(name, None, data, mime)
    if _claims_image(name, upload.content_type):
        raise ValidationError({"file": f"{name!r} is not a PNG, JPEG, GIF or WebP image."})
    if len(data) > MAX_TEXT_BYTES:
        raise ValidationError({"file": _too_large(MAX_TEXT_BYTES)})
    return CheckedUpload(name, _decode_text(data, name), data, None)


def store_upload(workspace: Workspace, upload: CheckedUpload) -> FileInfo:
    """Store a checked upload in ``workspace``; an existing file of that name is replaced."""
    _write(
        workspace.owner_id, str(workspace.pk), upload.name, upload.text, upload.data, upload.mime
    )
    row = WorkspaceFile.objects.filter(workspace=workspace, path=upload.name).values(*_INFO_COLUMNS)
    return _info(row.get())


def _write(
    owner_id: int, key: str, path: str, text: str | None, data: bytes, mime: BinaryMIME | None
) -> None:
    """Write one file through the kit's ``Workspace`` and the Django store."""
    store = DjangoWorkspaceStore(owner=owner_id)
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
