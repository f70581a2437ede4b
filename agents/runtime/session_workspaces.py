"""A session's workspaces, and the file changes it writes back at each commit.

The model works in the conversation's workspace and may switch to another of the user's
(the workspace tool's ``switch``). Each workspace the session holds, the first and any opened
later, is watched: only the paths the agent touched are written back, into each workspace's
stored files, so a file the user uploads while a run is going is never overwritten or dropped,
and edits made after a switch are saved too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Unpack

from orkestrel.core import Workspace as KitWorkspace
from orkestrel.core import WorkspaceInput, WorkspaceManager
from orkestrel.core.workspace import MoveEvent
from workspaces.models import Workspace
from workspaces.stores import DjangoWorkspaceStore

__all__ = ["SessionWorkspaces", "WorkspaceChanges"]


@dataclass(frozen=True, slots=True)
class WorkspaceChanges:
    """One workspace's file changes, merged into what is stored at commit time."""

    workspace_id: str
    written: Mapping[str, Mapping[str, Any]]
    removed: frozenset[str]
    cleared: bool

    def save(self, store: DjangoWorkspaceStore) -> None:
        # Locked before the read (PostgreSQL): an upload landing in between is not lost.
        Workspace.objects.select_for_update().filter(pk=self.workspace_id).exists()
        stored = store.get_sync(self.workspace_id)
        files: dict[str, Any] = {}
        if stored is not None and not self.cleared:
            files = {file["path"]: file for file in stored["files"]}
        files.update(self.written)
        for path in self.removed:
            files.pop(path, None)
        store.set_sync({"id": self.workspace_id, "files": list(files.values())})


@dataclass(slots=True)
class _Touched:
    """The paths the agent changed in one workspace since the last commit."""

    written: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    cleared: bool = False

    def write(self, path: str) -> None:
        self.written.add(path)
        self.removed.discard(path)

    def remove(self, path: str) -> None:
        self.removed.add(path)
        self.written.discard(path)

    def move(self, event: MoveEvent) -> None:
        self.remove(event["from"])
        self.write(event["to"])

    def clear(self) -> None:
        self.cleared = True
        self.written.clear()
        self.removed.clear()

    def reset(self) -> None:
        self.written, self.removed, self.cleared = set(), set(), False

    def __bool__(self) -> bool:
        return bool(self.written or self.removed or self.cleared)


class SessionWorkspaces(WorkspaceManager):
    """The kit's workspace registry, watching every workspace it adds (``open`` adds too)."""

    __slots__ = ("_touched",)

    def __init__(self, store: DjangoWorkspaceStore) -> None:
        super().__init__(store=store)
        self._touched: dict[str, _Touched] = {}

    def add(
        self, input: WorkspaceInput | None = None, /, **options: Unpack[WorkspaceInput]
    ) -> KitWorkspace:
        workspace = super().add(input, **options)
        touched = self._touched[workspace.id] = _Touched()
        emitter = workspace.emitter
        emitter.on("write", lambda file: touched.write(file.path))
        emitter.on("remove", touched.remove)
        emitter.on("move", touched.move)
        emitter.on("clear", touched.clear)
        return workspace

    def changes(self) -> list[WorkspaceChanges]:
        """Every workspace's changes since the last call (each one's touched paths only)."""
        changed: list[WorkspaceChanges] = []
        for workspace_id, touched in self._touched.items():
            workspace = self.workspace(workspace_id)
            if not touched or workspace is None:
                continue
            mine = {file["path"]: file for file in workspace.snapshot()["files"]}
            changed.append(
                WorkspaceChanges(
                    workspace_id=workspace_id,
                    written={path: mine[path] for path in touched.written if path in mine},
                    removed=frozenset(touched.removed),
                    cleared=touched.cleared,
                )
            )
            touched.reset()
        return changed
