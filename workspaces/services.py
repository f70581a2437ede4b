"""Files of one workspace: list, read, validate and store an upload, and edit.

These take a ``Workspace`` row whose ownership the caller checked (``conversations.files``
resolves it from a conversation the user owns). An upload is validated completely
(``check_upload``) before anything is written: a rejected file stores nothing. Every write is
one read-modify-write through the kit's ``Workspace`` under the workspace row's lock, so it
behaves as the agent's edits do and a concurrent run's commit is not lost.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict, assert_never

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.http import Http404

from orkestrel.core import (
    BinaryContent,
    BinaryMIME,
    File,
    Range,
    TextContent,
    WorkspaceError,
    create_file,
)
from orkestrel.core import Workspace as KitWorkspace
from orkestrel.core.documents import PDF_MIME, document_text
from orkestrel.document_reader import (
    DOCX_MIME,
    DocumentRefused,
    document_kind,
    max_document_bytes,
    read_document,
)

from .models import Workspace, WorkspaceFile
from .stores import DjangoWorkspaceStore

__all__ = [
    "MAX_TEXT_BYTES",
    "CheckedUpload",
    "Edited",
    "Extend",
    "FileEdit",
    "FileInfo",
    "Move",
    "Replace",
    "WriteRange",
    "check_text",
    "check_text_at",
    "check_upload",
    "check_upload_at",
    "clean_path",
    "edit_file",
    "file_info",
    "image_mime",
    "list_files",
    "max_image_bytes",
    "put_file",
    "read_file",
    "read_image",
    "read_raw",
    "read_span",
    "remove_file",
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
        raise ValidationError({"file": _over_limit(limit)})
    chunks: list[bytes] = []
    total = 0
    for chunk in upload.chunks():
        total += len(chunk)
        if total > limit:
            raise ValidationError({"file": _over_limit(limit)})
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> str:
    return f"The file is too large (the limit is {_human(limit)})."


def _over_limit(limit: int) -> ValidationError:
    """A file over ``limit``: code ``too_large``, which the upload views answer with ``413``."""
    return ValidationError(_too_large(limit), code="too_large")


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
    data = _read(upload, max(MAX_TEXT_BYTES, image_limit, max_document_bytes()))
    mime = image_mime(data)
    if mime is not None:
        if len(data) > image_limit:
            raise ValidationError({"file": _over_limit(image_limit)})
        return CheckedUpload(name, None, data, mime)
    if document_kind(name, data) in (PDF_MIME, DOCX_MIME):
        return _document_upload(name, data)
    if _claims_image(name, upload.content_type):
        raise ValidationError({"file": f"{name!r} is not a PNG, JPEG, GIF or WebP image."})
    if len(data) > MAX_TEXT_BYTES:
        raise ValidationError({"file": _over_limit(MAX_TEXT_BYTES)})
    return CheckedUpload(name, _decode_text(data, name), data, None)


def _document_upload(name: str, data: bytes) -> CheckedUpload:
    """A PDF or DOCX as the text file ``<name>.txt`` of its extracted text (README,
    "Documents"): a workspace holds text and images, and the model reads it as text."""
    try:
        document = read_document(name, data)
    except DocumentRefused as refused:
        raise ValidationError({"file": f"{name!r}: {refused}"}) from None
    text = document_text(document)
    if len(text.encode()) > MAX_TEXT_BYTES:
        raise ValidationError(
            {"file": f"{name!r}: its text is larger than {_human(MAX_TEXT_BYTES)}."}
        )
    return CheckedUpload(f"{name}.txt", text, text.encode(), None)


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
    with _editing(owner_id, key) as editing:
        if text is not None:
            editing.kit.write(path, text)  # keeps a replaced file's language, else infers it
        else:
            assert mime is not None
            editing.seat_image(path, data, mime)


# -- the REST API's edit surface -------------------------------------------------------------
#
# Every edit is one locked read-modify-write of the stored workspace through the kit's
# ``Workspace`` (the surface the agent's ``workspace`` tool drives), so an edit behaves as the
# agent's does. A rejected edit raises before anything is stored.


class _Editing:
    """The kit's view of one stored workspace, loaded under its row lock."""

    def __init__(self, owner_id: int, key: str) -> None:
        self.store = DjangoWorkspaceStore(owner=owner_id)
        self.key = key
        # Locked before the read (PostgreSQL), as a run's commit does: neither loses the other.
        Workspace.objects.select_for_update().filter(pk=key).values_list("pk").first()
        snapshot = self.store.get_sync(key) or {"id": key, "files": []}
        self.kit = KitWorkspace(id=key, seed=snapshot["files"])

    def seat_image(self, path: str, data: bytes, mime: BinaryMIME) -> None:
        """Put an image at ``path``; the kit's edit surface mints text only, so re-seed."""
        encoded = base64.b64encode(data).decode("ascii")
        existing = self.kit.file(path)
        image = create_file(
            path, BinaryContent(encoded, mime), "modified" if existing else "created"
        )
        files = [image if file.path == path else file for file in self.kit.files()]
        if existing is None:
            files.append(image)
        self.kit = KitWorkspace(id=self.key, seed=files)

    def save(self) -> None:
        self.store.set_sync(self.kit.snapshot())


@contextmanager
def _editing(owner_id: int, key: str) -> Iterator[_Editing]:
    """Load, let the caller edit, store what changed; an exception stores nothing."""
    with transaction.atomic():
        editing = _Editing(owner_id, key)
        try:
            yield editing
        except WorkspaceError as error:
            raise _invalid(error) from error
        editing.save()


def _invalid(error: WorkspaceError) -> ValidationError:
    # The kit's faults are the request's: a bad pattern or one that ran past its time (the
    # kit's ``PatternBounds``), a bad range, text edits of an image.
    field = {"PATTERN": "search", "RANGE": "range"}.get(error.code, "op")
    return ValidationError({field: error.message}, code=error.code.lower())


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteRange:
    """Replace a span of a text file (1-based carets, ``end`` exclusive, clamped to the text)."""

    range: Range
    text: str
    op: Literal["write"] = "write"


@dataclass(frozen=True, slots=True, kw_only=True)
class Extend:
    """Add text at the start (``prepend``) or the end (``append``) of a text file."""

    op: Literal["prepend", "append"]
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Replace:
    """Replace ``search`` (literal, or a Python regex) by the literal ``replace`` in one file.

    Matching follows case unless ``exact`` is false; ``limit`` caps the replacements
    (``None``: all).
    """

    search: str
    replace: str
    regex: bool = False
    exact: bool = True
    limit: int | None = None
    op: Literal["replace"] = "replace"


@dataclass(frozen=True, slots=True, kw_only=True)
class Move:
    """Give the file another path (an occupied one is refused)."""

    to: str
    op: Literal["move"] = "move"


FileEdit = WriteRange | Extend | Replace | Move


@dataclass(frozen=True, slots=True)
class Edited:
    """An edit's outcome: the file as it is now and, for a replace, how many matches changed."""

    file: FileInfo
    replaced: int | None = None


def file_info(file: File) -> FileInfo:
    """The description of a kit ``File`` (what ``list_files`` lists)."""
    content = file.content
    binary = isinstance(content, BinaryContent)
    return {
        "path": file.path,
        "kind": "image" if binary else "text",
        "language": content.language if isinstance(content, TextContent) else "",
        "mime": content.mime if isinstance(content, BinaryContent) else "",
        "size": file.size,
        "lines": file.lines,
        "state": file.state,
    }


def clean_path(path: str, field: str = "path") -> str:
    """A path a client may create: names joined by single ``/``, printable, not too long.

    Raises:
        ValidationError: ``{field: ...}``.
    """
    if not path:
        raise ValidationError({field: "Enter a path."})
    if len(path) > MAX_PATH:
        raise ValidationError({field: f"Keep the path under {MAX_PATH + 1} characters."})
    if not path.isprintable():
        raise ValidationError({field: "A path cannot contain control characters."})
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValidationError(
            {field: "Join names with single slashes, without '.' or '..' segments."}
        )
    return path


def check_text(text: str, field: str = "text") -> str:
    """Text a client may store: no NUL (PostgreSQL cannot hold it), at most ``MAX_TEXT_BYTES``."""
    if "\x00" in text:
        raise ValidationError({field: "Text cannot contain NUL characters."})
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError({field: "Text cannot contain lone surrogates."}) from None
    if size > MAX_TEXT_BYTES:
        raise ValidationError({field: _too_large(MAX_TEXT_BYTES)})
    return text


def check_text_at(text: str, path: str) -> str:
    """``check_text``, and ``path`` must not promise an image (as an upload's name must not)."""
    check_text(text)
    if _claims_image(path, None):
        raise ValidationError(
            {"path": f"{path!r} is named as an image; upload the image as multipart `file`."}
        )
    return text


def check_upload_at(upload: UploadedFile, path: str) -> CheckedUpload:
    """``check_upload``, stored at ``path`` rather than the upload's name (which it checks too)."""
    checked = check_upload(upload)
    if checked.text is not None:
        check_text_at(checked.text, path)
    return replace(checked, name=path)


def put_file(
    workspace: Workspace, path: str, content: str | CheckedUpload
) -> tuple[FileInfo, bool]:
    """Create or replace the file at ``path`` with text or a checked upload.

    Returns:
        The file's description and whether it was created.

    Raises:
        ValidationError: the text is too large, holds NUL, or the path names an image.
    """
    upload: CheckedUpload | None = None
    if isinstance(content, str):
        text: str | None = check_text_at(content, path)
    else:
        upload, text = content, content.text
    with _editing(workspace.owner_id, str(workspace.pk)) as editing:
        created = editing.kit.file(path) is None
        if text is not None:
            editing.kit.write(path, text)  # keeps a replaced file's language, else infers it
        else:
            assert upload is not None and upload.mime is not None
            editing.seat_image(path, upload.data, upload.mime)
        return file_info(_existing(editing.kit, path)), created


def _existing(kit: KitWorkspace, path: str) -> File:
    file = kit.file(path)
    if file is None:
        raise Http404("No such file.")
    return file


def edit_file(workspace: Workspace | None, path: str, edit: FileEdit) -> Edited:
    """Apply one edit to the file at ``path``, as the agent's ``workspace`` tool would.

    Raises:
        Http404: no such file.
        ValidationError: a text edit of an image, an invalid regex, or text grown too large.
        FileExistsError: a move onto another file's path.
    """
    if workspace is None:
        raise Http404("No such file.")
    with _editing(workspace.owner_id, str(workspace.pk)) as editing:
        kit = editing.kit
        file = _existing(kit, path)
        if isinstance(edit, Move):
            return Edited(file_info(_move(kit, path, edit.to)))
        if isinstance(file.content, BinaryContent):
            raise ValidationError(
                {"op": f"{path!r} is an image; only 'move' applies to it."}, code="modality"
            )
        replaced = None
        if isinstance(edit, WriteRange):
            kit.write(path, check_text(edit.text), edit.range)
        elif isinstance(edit, Extend):
            getattr(kit, edit.op)(path, check_text(edit.text))
        elif isinstance(edit, Replace):
            replaced = _replace(kit, file, edit)
        else:
            assert_never(edit)
        edited = _existing(kit, path)
        if edited.size > MAX_TEXT_BYTES:
            field = "replace" if isinstance(edit, Replace) else "text"
            raise ValidationError(
                {field: f"The edit makes the file too large: {_too_large(MAX_TEXT_BYTES)}"}
            )
        return Edited(file_info(edited), replaced)


def _replace(kit: KitWorkspace, file: File, edit: Replace) -> int:
    # The kit's replace spans every file: run it over a workspace of this one file only.
    if not edit.search:
        raise ValidationError({"search": "Enter text to search for."})
    one = KitWorkspace(id=kit.id, seed=[file])
    replacement = check_text(edit.replace, "replace")
    tally = one.replace(edit.search, replacement, edit.regex, edit.exact, edit.limit)
    text = one.read(file.path)
    if tally.replaced and text is not None:
        kit.write(file.path, text)
    return tally.replaced


def _move(kit: KitWorkspace, path: str, to: str) -> File:
    target = clean_path(to, "to")
    if target != path and kit.has(target):
        raise FileExistsError(f"A file already exists at {target!r}.")
    kit.move(path, target)
    return _existing(kit, target)


def remove_file(workspace: Workspace | None, path: str) -> None:
    """Delete the file at ``path`` (``Http404`` if there is none)."""
    if workspace is None:
        raise Http404("No such file.")
    with _editing(workspace.owner_id, str(workspace.pk)) as editing:
        if not editing.kit.remove(path):
            raise Http404("No such file.")


def read_span(workspace: Workspace | None, path: str, span: Range) -> dict[str, Any]:
    """A span of a text file: its description, the sliced ``text`` and the clamped ``range``.

    Raises:
        Http404: no such file.
        ValidationError: ``{"range": ...}``: the file is an image.
    """
    row = _row(workspace, path)
    file = row.to_file()
    if isinstance(file.content, BinaryContent):
        raise ValidationError({"range": f"{path!r} is an image; a range reads text."})
    result = KitWorkspace(id=str(row.workspace_id), seed=[file]).read(path, span)
    assert result is not None
    return {**file_info(file), "text": result.content, "range": result.range.to_dict()}


def read_raw(workspace: Workspace | None, path: str) -> tuple[bytes, str]:
    """A file's bytes and content type: an image's own, ``text/plain`` (UTF-8) for text."""
    row = _row(workspace, path)
    if row.data is not None:
        return base64.b64decode(row.data), row.mime
    return (row.text or "").encode("utf-8", "replace"), "text/plain; charset=utf-8"
