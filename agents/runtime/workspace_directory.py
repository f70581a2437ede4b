"""The workspaces a run's model may ``switch`` to: the user's own, newest first.

The workspace tool's ``list_workspaces`` reads them here (one query on the database thread),
so the model can find a workspace by its name instead of guessing an id.
"""

from __future__ import annotations

from typing import TypedDict

from django.db.models import Count

from orkestrel.db import in_thread
from workspaces.models import Workspace

__all__ = ["LISTED", "WorkspaceEntry", "owned_workspaces"]

# The most workspaces one listing names: a user with hundreds of chats has hundreds of them,
# and the model needs the recent ones; the result says when more exist.
LISTED = 50


class WorkspaceEntry(TypedDict):
    """One workspace the model may switch to."""

    id: str
    name: str
    files: int


def _owned(user_id: int) -> tuple[list[WorkspaceEntry], int]:
    rows = Workspace.objects.filter(owner_id=user_id)
    total = rows.count()
    listed = rows.annotate(file_count=Count("files")).order_by("-updated")[:LISTED]
    return [{"id": str(row.pk), "name": str(row), "files": row.file_count} for row in listed], total


async def owned_workspaces(user_id: int) -> tuple[list[WorkspaceEntry], int]:
    """The user's workspaces (at most ``LISTED``, newest first) and how many they own."""
    return await in_thread(_owned)(user_id)
