"""The durable workspace seam: the JSON snapshot, its read-boundary guard, and the stores.

A ``WorkspaceSnapshot`` is ``{"id": str, "files": [FileDict, ...]}``: plain JSON, a flat list
of files that each carry their own ``path``. A store persists snapshots keyed by their own id,
with no expiry: a snapshot lives until it is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from .files import File, FileDict, file_to_dict, is_file

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # ``typing.TypeIs`` from Python 3.13

__all__ = [
    "MemoryWorkspaceStore",
    "WorkspaceSnapshot",
    "WorkspaceStore",
    "create_memory_workspace_store",
    "is_workspace_snapshot",
]


class WorkspaceSnapshot(TypedDict):
    """A workspace as plain JSON: its ``id`` and its files in insertion order."""

    id: str
    files: list[FileDict]


def is_workspace_snapshot(value: object) -> TypeIs[WorkspaceSnapshot]:
    """Whether ``value`` is a ``WorkspaceSnapshot`` (string ``id``, a list of valid files).

    Total: any malformed shape is ``False``, never an exception.
    """
    try:
        if not isinstance(value, Mapping):
            return False
        files = value.get("files")
        return (
            isinstance(value.get("id"), str)
            and isinstance(files, list | tuple)
            and all(is_file(file) for file in files)
        )
    except Exception:  # noqa: BLE001 - a guard is total
        return False


def _plain(value: Any) -> Any:
    # A detached, JSON-shaped copy: nothing the caller holds can reach into the store.
    if isinstance(value, File):
        return file_to_dict(value)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(item) for item in value]
    return value


@runtime_checkable
class WorkspaceStore(Protocol):
    """Async persistence for workspace snapshots, keyed by each snapshot's own ``id``."""

    async def get(self, id: str) -> WorkspaceSnapshot | None:
        """The stored snapshot for ``id``, or ``None``."""
        ...

    async def set(self, snapshot: WorkspaceSnapshot) -> None:
        """Insert or replace ``snapshot`` under ``snapshot["id"]``."""
        ...

    async def delete(self, id: str) -> None:
        """Drop the snapshot for ``id``; an absent id is a no-op."""
        ...


class MemoryWorkspaceStore:
    """A process-lifetime in-memory ``WorkspaceStore``; stores and returns detached copies."""

    __slots__ = ("_snapshots",)

    def __init__(self) -> None:
        self._snapshots: dict[str, WorkspaceSnapshot] = {}

    async def get(self, id: str) -> WorkspaceSnapshot | None:
        snapshot = self._snapshots.get(id)
        return None if snapshot is None else _plain(snapshot)

    async def set(self, snapshot: WorkspaceSnapshot) -> None:
        if not is_workspace_snapshot(snapshot):
            raise TypeError(
                "snapshot must be a workspace snapshot: a string id and a list of files"
            )
        stored: WorkspaceSnapshot = _plain(snapshot)
        self._snapshots[stored["id"]] = stored

    async def delete(self, id: str) -> None:
        self._snapshots.pop(id, None)


def create_memory_workspace_store() -> MemoryWorkspaceStore:
    """Create an empty in-memory workspace store."""
    return MemoryWorkspaceStore()
