"""A workspace as a folder on disk for a command, and the command's changes back as edits.

``copy_in`` writes every file of a workspace under a fresh folder and remembers its bytes;
``changes`` reads the folder again once the command is over and compares. Text files the
command created or changed come back as ``write`` edits, files it deleted as ``remove``;
what cannot come back (a binary or oversized file, a symbolic link, too many files) is
reported as skipped, never followed: the server reads only regular files, without following
links, so a command cannot make it read outside its folder.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from orkestrel.core import BinaryContent, File, Workspace

__all__ = ["MAX_FILE_BYTES", "MAX_FILES", "Changes", "Copied", "changes", "copy_in", "apply"]

MAX_FILE_BYTES = 1_000_000  # a text file larger than this is not brought back
MAX_FILES = 500  # edits one call may bring back


def _relative(path: str) -> PurePosixPath | None:
    """A workspace path as a path inside the folder, or ``None`` if it would leave it."""
    parts = PurePosixPath(path)
    if parts.is_absolute() or ".." in parts.parts or str(parts) != path:
        return None  # absolute, climbing out, or not spelled plainly ("a//b", "./a", "a/")
    return parts


@dataclass(frozen=True, slots=True)
class Copied:
    """What ``copy_in`` put in the folder: each path's bytes, and what it could not place."""

    files: dict[str, bytes]
    binary: frozenset[str]
    skipped: list[dict[str, str]]


def copy_in(files: Iterable[File], folder: str) -> Copied:
    """Write ``files`` (a workspace's) under ``folder``."""
    placed: dict[str, bytes] = {}
    binary: set[str] = set()
    skipped: list[dict[str, str]] = []
    for file in files:
        relative = _relative(file.path)
        if relative is None:
            skipped.append({"path": file.path, "reason": "not a plain relative path"})
            continue
        content = file.content
        if isinstance(content, BinaryContent):
            data = base64.b64decode(content.data)
            binary.add(file.path)
        else:
            data = content.text.encode("utf-8")
        target = os.path.join(folder, *relative.parts)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "xb") as out:
                out.write(data)
        except OSError as error:  # "a" and "a/b" both in the workspace
            skipped.append({"path": file.path, "reason": error.strerror or str(error)})
            continue
        placed[file.path] = data
    return Copied(placed, frozenset(binary), skipped)


@dataclass(slots=True)
class Changes:
    """The edits a command's folder holds against what was copied in."""

    written: dict[str, str] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    # Why nothing came back at all (the command timed out), when that is so.
    withheld: str | None = None

    def report(self) -> dict[str, Any]:
        """The tool result's ``files``: created, modified and deleted paths, and the skipped."""
        found: dict[str, Any] = {
            "created": self.created,
            "modified": self.modified,
            "deleted": self.deleted,
        }
        if self.skipped:
            found["skipped"] = self.skipped
        if self.withheld is not None:
            found["not_brought_back"] = self.withheld
        return found


def _walk(folder: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``folder`` but directories, by relative path; links are not followed."""
    for root, directories, names in os.walk(folder, followlinks=False):
        directories.sort()
        links = [name for name in directories if os.path.islink(os.path.join(root, name))]
        for name in sorted(names) + links:
            full = os.path.join(root, name)
            yield os.path.relpath(full, folder).replace(os.sep, "/"), os.lstat(full)


def _read(path: str) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as file:
        return file.read(MAX_FILE_BYTES + 1)


def changes(folder: str, copied: Copied) -> Changes:
    """What the command created, changed and deleted in ``folder``, as workspace edits."""
    found = Changes()
    seen: set[str] = set()

    def skip(path: str, reason: str) -> None:
        found.skipped.append({"path": path, "reason": reason})

    for path, info in _walk(folder):
        seen.add(path)
        before = copied.files.get(path)
        if not stat.S_ISREG(info.st_mode):
            skip(path, "not a regular file")
            continue
        if info.st_size > MAX_FILE_BYTES:
            skip(path, f"larger than {MAX_FILE_BYTES} bytes")
            continue
        try:
            data = _read(os.path.join(folder, path))
        except OSError as error:
            skip(path, error.strerror or "unreadable")
            continue
        if data == before:
            continue
        if path in copied.binary:
            skip(path, "changes to binary files are not brought back")
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skip(path, "not UTF-8 text")
            continue
        if len(found.written) + len(found.deleted) >= MAX_FILES:
            skip(path, f"more than {MAX_FILES} files changed")
            continue
        found.written[path] = text
        (found.created if before is None else found.modified).append(path)
    for path in copied.files:
        if path not in seen:
            found.deleted.append(path)
    return found


def apply(found: Changes, workspace: Workspace) -> None:
    """Make ``found``'s edits in ``workspace`` (its events tell the run what to save)."""
    for path, text in found.written.items():
        workspace.write(path, text)
    for path in found.deleted:
        workspace.remove(path)
