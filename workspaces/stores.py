"""The Django-backed ``WorkspaceStore``: the kit's workspace snapshots over ``WorkspaceFile`` rows.

The kit's store contract is three async methods, ``get`` / ``set`` / ``delete``, keyed by the
snapshot's own ``id`` (here a canonical UUID string, the ``Workspace`` primary key). ``set``
writes only what changed, keyed by path: new paths are inserted, changed files updated, removed
paths deleted, in one transaction and a constant number of queries. The ``*_sync`` twins serve
sync callers (views, management commands, tests).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from orkestrel.core.files import File, FileDict, file_from_dict
from orkestrel.core.workspace_store import WorkspaceSnapshot, is_workspace_snapshot
from orkestrel.db import ascending, chunked, in_thread, owner_pk, parse_id
from orkestrel.statements import Names, Query, field_of, prep

from .models import Workspace, WorkspaceFile, file_fields

__all__ = ["DjangoWorkspaceStore"]

# The columns a save may change on an existing row (``path`` is the identity).
_CONTENT = ("text", "language", "data", "mime", "state", "size", "lines")


class DjangoWorkspaceStore:
    """A ``WorkspaceStore`` over the ``workspaces`` models.

    Args:
        owner: The user (or user id) whose workspaces this store sees and creates. Without
            one the store sees every workspace but cannot create one (``set`` of an unknown id
            raises ``ValueError``).
    """

    def __init__(self, owner: AbstractBaseUser | int | None = None) -> None:
        self._owner = owner_pk(owner)

    def __repr__(self) -> str:
        return f"DjangoWorkspaceStore(owner={self._owner!r})"

    # -- the kit's async contract ----------------------------------------------------------

    async def get(self, id: str) -> WorkspaceSnapshot | None:
        """The stored snapshot for ``id``, or ``None`` (unknown or malformed id)."""
        return await in_thread(self.get_sync)(id)

    async def set(self, snapshot: WorkspaceSnapshot) -> None:
        """Insert or update ``snapshot`` under ``snapshot["id"]`` (see ``set_sync``)."""
        await in_thread(self.set_sync)(snapshot)

    async def delete(self, id: str) -> None:
        """Drop the workspace ``id`` and its files; an absent id is a no-op."""
        await in_thread(self.delete_sync)(id)

    # -- sync twins ------------------------------------------------------------------------

    def _workspaces(self) -> QuerySet[Workspace]:
        queryset = Workspace.objects.all()
        return queryset if self._owner is None else queryset.filter(owner_id=self._owner)

    def get_sync(self, id: str) -> WorkspaceSnapshot | None:
        """Rebuild the snapshot in one query; ``None`` for an unknown or malformed id."""
        key = parse_id(id)
        if key is None:
            return None
        query, params = _FILES, [prep(Workspace, "id", key)]
        if self._owner is not None:
            query, params = _OWNED_FILES, [*params, self._owner]
        rows = query.rows(params)
        if not rows:
            return None
        return {"id": str(key), "files": [_file_dict(*row) for row in rows if row[0] is not None]}

    def set_sync(self, snapshot: WorkspaceSnapshot) -> None:
        """Write ``snapshot``, changing only the rows that differ, in one transaction.

        Raises:
            TypeError: ``snapshot`` is not a workspace snapshot (as the in-memory store).
            ValueError: the id is not a canonical UUID string, a path repeats, or the
                workspace is new and the store has no owner.
            PermissionError: the workspace belongs to another owner than the store's.
        """
        if not is_workspace_snapshot(snapshot):
            raise TypeError(
                "snapshot must be a workspace snapshot: a string id and a list of files"
            )
        key = parse_id(snapshot["id"])
        if key is None:
            raise ValueError(
                f"workspace id must be a canonical UUID string, not {snapshot['id']!r}"
            )
        files = [file_from_dict(item) for item in snapshot["files"]]
        if len({file.path for file in files}) != len(files):
            raise ValueError("snapshot files must have unique paths")
        with transaction.atomic():
            self._claim(key)
            _sync_files(key, files)

    def delete_sync(self, id: str) -> None:
        """Drop the workspace ``id`` (its files cascade); unknown or malformed ids are no-ops."""
        key = parse_id(id)
        if key is not None:
            self._workspaces().filter(pk=key).delete()

    def _claim(self, key: uuid.UUID) -> None:
        # Lock the row (PostgreSQL) so two saves of one workspace serialize, or create it.
        owner = _owner_locked(key)
        if owner is None:
            if self._owner is None:
                raise ValueError("creating a workspace needs a store with an owner")
            try:
                with transaction.atomic():
                    Workspace.objects.create(id=key, owner_id=self._owner)
                return
            except IntegrityError:
                # A concurrent first save created it: wait for its lock and carry on.
                owner = _owner_locked(key)
                if owner is None:
                    raise
        if self._owner is not None and owner != self._owner:
            raise PermissionError(f"workspace {str(key)!r} belongs to another user")


def _owner_locked(key: uuid.UUID) -> int | None:
    """The workspace's owner id (``None``: no such workspace), its row locked."""
    return (
        Workspace.objects.select_for_update()
        .filter(pk=key)
        .values_list("owner_id", flat=True)
        .first()
    )


def _sync_files(key: uuid.UUID, files: list[File]) -> None:
    """Make the workspace's rows match ``files`` (in order), touching only what differs."""
    stored = {row.path: row for row in WorkspaceFile.objects.filter(workspace_id=key)}
    wanted = {file.path for file in files}
    removed = [row.pk for path, row in stored.items() if path not in wanted]
    positions = _positions([stored.get(file.path) for file in files], stored)
    now = timezone.now()
    changed: list[WorkspaceFile] = []
    created: list[WorkspaceFile] = []
    for file, position in zip(files, positions, strict=True):
        fields = file_fields(file)
        row = stored.get(file.path)
        if row is None:
            created.append(WorkspaceFile(workspace_id=key, position=position, **fields))
            continue
        if row.position != position or any(getattr(row, name) != fields[name] for name in _CONTENT):
            for name in _CONTENT:
                setattr(row, name, fields[name])
            row.position = position
            row.updated = now
            changed.append(row)
    for pks in chunked(removed):
        WorkspaceFile.objects.filter(pk__in=pks).delete()
    if changed:
        WorkspaceFile.objects.bulk_update(changed, [*_CONTENT, "position", "updated"])
    if created:
        WorkspaceFile.objects.bulk_create(created)
    if removed or changed or created:
        Workspace.objects.filter(pk=key).update(updated=now)


def _positions(rows: list[WorkspaceFile | None], stored: dict[str, WorkspaceFile]) -> list[int]:
    """The position each file of the snapshot gets (``rows[i]`` is its stored row, if any).

    Stored positions stay while they follow the snapshot's order (edits and appends rewrite
    no other row); otherwise the whole workspace is renumbered.
    """
    if not ascending([row.position if row else None for row in rows]):
        return list(range(len(rows)))
    top = max((row.position for row in stored.values()), default=-1)
    result: list[int] = []
    for row in rows:
        if row is None:
            top += 1
        result.append(top if row is None else row.position)
    return result


# A file row's columns, as ``_file_dict`` takes them.
_FILE_COLUMNS = ("path", "text", "language", "data", "mime", "state", "size", "lines")


def _files_sql(n: Names, owned: bool) -> str:
    # The workspace joined to its files: no row means no workspace, a row of NULLs (the outer
    # join's) a workspace without files.
    w, f = "w", "f"
    owner = f" AND {n.column(Workspace, 'owner', w)} = %s" if owned else ""
    return (
        f"SELECT {n.columns(WorkspaceFile, _FILE_COLUMNS, f)} FROM {n.table(Workspace)} {w} "
        f"LEFT OUTER JOIN {n.table(WorkspaceFile)} {f} "
        f"ON {n.column(WorkspaceFile, 'workspace', f)} = {n.column(Workspace, 'id', w)} "
        f"WHERE {n.column(Workspace, 'id', w)} = %s{owner} "
        f"ORDER BY {n.column(WorkspaceFile, 'position', f)}, {n.column(WorkspaceFile, 'id', f)}"
    )


_FILE_FIELDS = [field_of(WorkspaceFile, name) for name in _FILE_COLUMNS]
_FILES = Query(lambda n: _files_sql(n, owned=False), _FILE_FIELDS)
_OWNED_FILES = Query(lambda n: _files_sql(n, owned=True), _FILE_FIELDS)


def _file_dict(
    path: str,
    text: str | None,
    language: str,
    data: str | None,
    mime: str,
    state: str,
    size: int,
    lines: int,
) -> FileDict:
    content: Any
    if data is not None:
        content = {"data": data, "mime": mime}
    else:
        content = {"text": text, "language": language}
    return {"path": path, "content": content, "state": state, "size": size, "lines": lines}
