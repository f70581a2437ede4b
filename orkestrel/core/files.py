"""The file primitive: a path-addressed, immutable body of text or base64 binary content.

``FileContent`` is tagless: the text arm carries ``text`` + ``language``, the binary arm
``data`` (base64) + ``mime``; ``is_text`` / ``is_binary`` tell them apart structurally. A
``File`` derives its ``size`` and ``lines`` once, when it is built, so they never drift.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, assert_never, get_args

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # ``typing.TypeIs`` from Python 3.13

__all__ = [
    "BINARY_MIMES",
    "BinaryContent",
    "BinaryContentDict",
    "BinaryMIME",
    "FILE_STATES",
    "File",
    "FileContent",
    "FileDict",
    "FileInput",
    "FilesInput",
    "FileState",
    "TextContent",
    "TextContentDict",
    "compute_size",
    "count_lines",
    "create_binary_content",
    "create_file",
    "create_text_content",
    "decoded_size",
    "file_from_dict",
    "file_to_dict",
    "is_binary",
    "is_file",
    "is_image",
    "is_text",
    "to_content",
    "to_files",
]

BinaryMIME = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
BINARY_MIMES: frozenset[str] = frozenset(get_args(BinaryMIME))
FileState = Literal["created", "modified", "loaded", "deleted"]
FILE_STATES: frozenset[str] = frozenset(get_args(FileState))

# Canonical padded base64 (RFC 4648 §4): whole quanta, padding only in the last one.
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class TextContentDict(TypedDict):
    text: str
    language: str


class BinaryContentDict(TypedDict):
    data: str
    mime: BinaryMIME


class FileDict(TypedDict):
    """A ``File`` as plain JSON (one element of a workspace snapshot's ``files``)."""

    path: str
    content: TextContentDict | BinaryContentDict
    state: str
    size: int
    lines: int


@dataclass(frozen=True, slots=True)
class TextContent:
    """The text arm of ``FileContent``: the body and its language tag (``"text"`` if unknown)."""

    text: str
    language: str = "text"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"text must be a string, not {type(self.text).__name__}")
        if not isinstance(self.language, str):
            raise TypeError(f"language must be a string, not {type(self.language).__name__}")
        if not self.language:
            raise ValueError("language must be a non-empty string")


@dataclass(frozen=True, slots=True)
class BinaryContent:
    """The binary arm of ``FileContent``: canonical padded base64 ``data`` and its ``mime``."""

    data: str
    mime: BinaryMIME

    def __post_init__(self) -> None:
        if not isinstance(self.data, str):
            raise TypeError(f"data must be a base64 string, not {type(self.data).__name__}")
        if not _is_base64(self.data):
            raise ValueError("data must be a canonical padded base64 string")
        if not isinstance(self.mime, str) or self.mime not in BINARY_MIMES:
            raise ValueError(f"mime must be one of {sorted(BINARY_MIMES)}, not {self.mime!r}")


FileContent = TextContent | BinaryContent


def _is_base64(value: object) -> bool:
    return isinstance(value, str) and _BASE64.fullmatch(value) is not None


def create_text_content(text: str, language: str | None = None) -> TextContent:
    """Build the text arm; ``language`` defaults to ``"text"``."""
    return TextContent(text, "text" if language is None else language)


def create_binary_content(data: str, mime: BinaryMIME) -> BinaryContent:
    """Build the binary arm from base64 ``data`` and a supported image ``mime``.

    Raises:
        ValueError: ``data`` is not canonical base64, or ``mime`` is not a ``BinaryMIME``.
    """
    return BinaryContent(data, mime)


def to_content(value: FileContent | Mapping[str, Any]) -> FileContent:
    """Coerce a content arm or a mapping (``{"text", "language"}`` / ``{"data", "mime"}``).

    Raises ``TypeError`` / ``ValueError`` naming the offending field.
    """
    if isinstance(value, TextContent | BinaryContent):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"content must be a mapping, not {type(value).__name__}")
    if "text" in value:
        return TextContent(value["text"], value.get("language") or "text")
    if "data" in value:
        # Unchecked on purpose: ``BinaryContent`` validates both and names the bad field.
        mime: Any = value.get("mime")
        return BinaryContent(value["data"], mime)
    raise TypeError("content must carry either text (+ language) or data (+ mime)")


def is_text(content: object) -> TypeIs[TextContent | TextContentDict]:
    """Whether ``content`` is the text arm (a ``TextContent`` or ``{"text", "language"}``)."""
    if isinstance(content, TextContent):
        return True
    try:
        return (
            isinstance(content, Mapping)
            and isinstance(content.get("text"), str)
            and isinstance(content.get("language"), str)
            and bool(content.get("language"))
        )
    except Exception:  # noqa: BLE001 - a guard is total
        return False


def is_binary(content: object) -> TypeIs[BinaryContent | BinaryContentDict]:
    """Whether ``content`` is the binary arm (base64 ``data`` with a supported ``mime``)."""
    if isinstance(content, BinaryContent):
        return True
    try:
        return (
            isinstance(content, Mapping)
            and _is_base64(content.get("data"))
            and content.get("mime") in BINARY_MIMES
        )
    except Exception:  # noqa: BLE001 - a guard is total
        return False


def _arm(content: object) -> FileContent | None:
    # The content as its dataclass arm, or None: the derivations below stay total.
    if isinstance(content, TextContent | BinaryContent):
        return content
    if not isinstance(content, Mapping):
        return None
    data: Mapping[str, Any] = content
    try:
        if is_text(data):
            return TextContent(data["text"], data["language"])
        if is_binary(data):
            return BinaryContent(data["data"], data["mime"])
    except Exception:  # noqa: BLE001 - the helpers are total
        return None
    return None


def is_image(content: object) -> TypeIs[BinaryContent | BinaryContentDict]:
    """Whether ``content`` is a binary arm whose MIME is ``image/*`` (an image is a binary)."""
    arm = _arm(content)
    return isinstance(arm, BinaryContent) and arm.mime.startswith("image/")


def decoded_size(data: object) -> int:
    """The decoded byte length of a base64 string, from its length and ``=`` padding.

    Total: anything that is not a string counts as ``0`` bytes; never negative.
    """
    if not isinstance(data, str):
        return 0
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return max(0, len(data) * 3 // 4 - padding)


def compute_size(content: object) -> int:
    """The byte size of a content arm: UTF-8 bytes (text) or decoded bytes (binary); total."""
    arm = _arm(content)
    if isinstance(arm, TextContent):
        # surrogatepass: a lone surrogate counts 3 bytes, as the seed's TextEncoder's U+FFFD would.
        return len(arm.text.encode("utf-8", "surrogatepass"))
    return decoded_size(arm.data) if isinstance(arm, BinaryContent) else 0


def count_lines(content: object) -> int:
    """The line count of a text arm (``0`` for ``""``, else newlines + 1); ``0`` otherwise."""
    arm = _arm(content)
    if not isinstance(arm, TextContent) or not arm.text:
        return 0
    return arm.text.count("\n") + 1


def check_path(path: object, name: str = "path") -> str:
    """Validate a file path: a non-empty string without NUL (``name`` labels the error)."""
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a string, not {type(path).__name__}")
    if not path or "\x00" in path:
        raise ValueError(f"{name} must be a non-empty string without NUL, not {path!r}")
    return path


@dataclass(frozen=True, slots=True)
class File:
    """An immutable, path-addressed file; ``size`` / ``lines`` are derived once from ``content``.

    The ``path`` is the identity (there is no id). Never edit one: a ``Workspace`` replaces it.
    """

    path: str
    content: FileContent
    state: FileState = "created"
    size: int = field(init=False)
    lines: int = field(init=False)

    def __post_init__(self) -> None:
        check_path(self.path)
        if not isinstance(self.content, TextContent | BinaryContent):
            raise TypeError("content must be a TextContent or a BinaryContent")
        if not isinstance(self.state, str) or self.state not in FILE_STATES:
            raise ValueError(f"state must be one of {sorted(FILE_STATES)}, not {self.state!r}")
        object.__setattr__(self, "size", compute_size(self.content))
        object.__setattr__(self, "lines", count_lines(self.content))

    def to_dict(self) -> FileDict:
        return file_to_dict(self)


FileInput = File | Mapping[str, Any]


def create_file(
    path: str | FileInput,
    content: FileContent | Mapping[str, Any] | None = None,
    state: FileState = "created",
) -> File:
    """Build an immutable ``File`` from a path + content (+ state), or from one ``FileInput``.

    ``create_file("a.txt", create_text_content("hi"))`` and
    ``create_file({"path": "a.txt", "content": {"text": "hi", "language": "text"}})`` agree.
    A mapping's ``size`` / ``lines`` are ignored: they are always derived from the content.

    Raises ``TypeError`` / ``ValueError`` naming the offending field.
    """
    if isinstance(path, File):
        return path
    if isinstance(path, Mapping):
        if content is not None:
            raise TypeError("content must not be given beside a FileInput mapping")
        if "content" not in path:
            raise TypeError("file content is required")
        return File(
            check_path(path.get("path")),
            to_content(path["content"]),
            path.get("state") or "created",
        )
    if content is None:
        raise TypeError("content is required")
    return File(check_path(path), to_content(content), state)


def is_file(value: object) -> TypeIs[File | FileDict]:
    """Whether ``value`` is structurally a ``File`` (or its JSON dict); total, never raises."""
    if isinstance(value, File):
        return True
    try:
        if not isinstance(value, Mapping):
            return False
        path, size, lines = value.get("path"), value.get("size"), value.get("lines")
        if not isinstance(path, str) or not path or "\x00" in path:
            return False
        if value.get("state") not in FILE_STATES:
            return False
        for number in (size, lines):
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                return False
        content = value.get("content")
        return is_text(content) or is_binary(content)
    except Exception:  # noqa: BLE001 - a guard is total
        return False


def file_to_dict(file: File) -> FileDict:
    """A JSON-ready dict of ``file`` (the element shape of a workspace snapshot)."""
    content = file.content
    body: TextContentDict | BinaryContentDict
    if isinstance(content, TextContent):
        body = {"text": content.text, "language": content.language}
    elif isinstance(content, BinaryContent):
        body = {"data": content.data, "mime": content.mime}
    else:
        assert_never(content)
    return {
        "path": file.path,
        "content": body,
        "state": file.state,
        "size": file.size,
        "lines": file.lines,
    }


def file_from_dict(value: Mapping[str, Any]) -> File:
    """Rebuild a ``File`` from its JSON dict; ``size`` / ``lines`` are re-derived from content.

    Raises ``TypeError`` / ``ValueError`` naming the offending field.
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"file must be a mapping, not {type(value).__name__}")
    return create_file(value)


FilesInput = (
    Iterable[File | Mapping[str, Any] | tuple[str, File | Mapping[str, Any]]]
    | Mapping[str, File | Mapping[str, Any]]
)


def to_files(value: FilesInput) -> tuple[File, ...]:
    """Coerce Files, their JSON dicts, ``(path, file)`` pairs or a ``{path: file}`` mapping.

    In a pair or mapping the key is the file's identity: a file stored under another path is
    re-keyed. Raises ``TypeError`` / ``ValueError`` naming the offending item.
    """
    items: object = list(value.items()) if isinstance(value, Mapping) else value
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise TypeError(f"files must be an iterable of files, not {type(value).__name__}")
    files: list[File] = []
    for item in items:
        if isinstance(item, File | Mapping):
            files.append(create_file(item))
        elif isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
            path, one = item
            if not isinstance(one, File | Mapping):
                raise TypeError(f"file for {path!r} must be a File or a mapping")
            file = create_file(one)
            files.append(file if file.path == path else create_file(path, file.content, file.state))
        else:
            raise TypeError(f"files must hold files or (path, file) pairs, not {item!r}")
    return tuple(files)
