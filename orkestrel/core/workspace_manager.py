"""The ``WorkspaceManager``: an id-keyed registry of workspaces with an active pointer.

The first ``add`` activates its workspace; ``switch`` re-points ``active``. ``active`` is
looked up by id on every access, so re-adding the active id is reflected at once. With a
``store``, ``open`` hydrates a workspace the registry lacks and ``save`` persists one. The
manager emits nothing: each workspace owns its own emitter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, Unpack

from .emitter import ErrorHandler
from .workspace import Workspace, WorkspaceListeners, WorkspaceSeed
from .workspace_store import WorkspaceStore, is_workspace_snapshot

__all__ = ["WorkspaceInput", "WorkspaceManager", "create_workspace_manager"]


class WorkspaceInput(TypedDict, total=False):
    """What ``WorkspaceManager.add`` accepts (every field optional)."""

    id: str
    on: WorkspaceListeners
    error: ErrorHandler
    seed: WorkspaceSeed


_INPUT_KEYS = frozenset(WorkspaceInput.__annotations__)


class WorkspaceManager:
    """The registry of ``Workspace``s, in insertion order, with the active one.

    Args:
        on: Default listeners for every workspace ``add`` creates (an input's ``on`` wins).
        error: Default listener-error handler (an input's ``error`` wins).
        store: The durable seam behind ``open`` / ``save``.
    """

    __slots__ = ("_active", "_error", "_on", "_store", "_workspaces")

    def __init__(
        self,
        on: WorkspaceListeners | None = None,
        error: ErrorHandler | None = None,
        store: WorkspaceStore | None = None,
    ) -> None:
        if store is not None and not isinstance(store, WorkspaceStore):
            raise TypeError("store must provide async get, set and delete")
        self._on = on
        self._error = error
        self._store = store
        self._workspaces: dict[str, Workspace] = {}
        self._active: str | None = None

    def __repr__(self) -> str:
        return f"WorkspaceManager(count={len(self._workspaces)}, active={self._active!r})"

    @property
    def count(self) -> int:
        """How many workspaces are registered."""
        return len(self._workspaces)

    @property
    def active(self) -> Workspace | None:
        """The active workspace (the one a context renders), or ``None``."""
        return None if self._active is None else self._workspaces.get(self._active)

    @property
    def store(self) -> WorkspaceStore | None:
        return self._store

    def workspace(self, id: str) -> Workspace | None:
        """The workspace with ``id``, or ``None``."""
        return self._workspaces.get(id)

    def workspaces(self) -> tuple[Workspace, ...]:
        """Every workspace, in insertion order."""
        return tuple(self._workspaces.values())

    def add(
        self, input: WorkspaceInput | None = None, /, **options: Unpack[WorkspaceInput]
    ) -> Workspace:
        """Create, register and return a workspace from ``input`` (or the same keywords).

        ``input`` may give ``id``, ``on``, ``error`` and ``seed``. The manager's default ``on``
        / ``error`` apply unless given; an existing id is overwritten. When no workspace is
        active (the first add), the new one becomes active.
        """
        # Read as a plain mapping: a caller's mapping may hold unknown keys (refused below).
        fields: Mapping[str, Any] = options
        if input is not None:
            if options:
                raise TypeError("add takes an input mapping or keywords, not both")
            if not isinstance(input, Mapping):
                raise TypeError(f"input must be a mapping, not {type(input).__name__}")
            fields = dict(input)
        unknown = set(fields) - _INPUT_KEYS
        if unknown:
            raise TypeError(f"unknown workspace input field(s): {sorted(unknown)}")
        workspace = Workspace(
            id=fields.get("id"),
            on=fields["on"] if fields.get("on") is not None else self._on,
            error=fields["error"] if fields.get("error") is not None else self._error,
            seed=fields.get("seed"),
        )
        self._workspaces[workspace.id] = workspace
        if self._active is None:
            self._active = workspace.id
        return workspace

    def switch(self, id: str) -> Workspace | None:
        """Activate the workspace with ``id`` and return it; an unknown id changes nothing."""
        workspace = self._workspaces.get(id)
        if workspace is not None:
            self._active = id
        return workspace

    def remove(self, id: str | Iterable[str]) -> bool:
        """Remove one workspace or a list of them; ``True`` if any was removed.

        Removing the active workspace leaves no workspace active.
        """
        if not isinstance(id, str) and not isinstance(id, Iterable):
            raise TypeError(f"id must be a string or a list of strings, not {type(id).__name__}")
        ids = [id] if isinstance(id, str) else list(id)
        removed = False
        for one in ids:
            if self._workspaces.pop(one, None) is not None:
                removed = True
                if one == self._active:
                    self._active = None
        return removed

    def clear(self) -> None:
        """Remove every workspace; none is active afterwards."""
        self._workspaces.clear()
        self._active = None

    async def open(self, id: str) -> Workspace | None:
        """Activate the workspace with ``id``, hydrating it from the store when unregistered.

        Returns ``None`` when neither the registry nor the store has it (or the stored
        snapshot is malformed).
        """
        if id in self._workspaces:
            return self.switch(id)
        if self._store is None:
            return None
        snapshot = await self._store.get(id)
        # The registry may have gained the id while the store answered: keep the live one.
        if id in self._workspaces:
            return self.switch(id)
        if not is_workspace_snapshot(snapshot):
            return None
        self.add(id=id, seed=snapshot["files"])
        return self.switch(id)

    async def save(self, id: str) -> bool:
        """Persist registered workspace ``id``; ``False`` without a store or for an unknown id."""
        workspace = self._workspaces.get(id)
        if workspace is None or self._store is None:
            return False
        await self._store.set(workspace.snapshot())
        return True


def create_workspace_manager(
    on: WorkspaceListeners | None = None,
    error: ErrorHandler | None = None,
    store: WorkspaceStore | None = None,
) -> WorkspaceManager:
    """Create an empty ``WorkspaceManager`` (optionally backed by a ``store``)."""
    return WorkspaceManager(on=on, error=error, store=store)
