"""The workspace of a conversation: the chat's file panel and the API's file endpoints.

Every function takes the acting ``user`` and a ``conversation_id``; ownership is checked through
``get_conversation`` (``Http404`` for someone else's conversation). A write is validated
completely before anything is written: a rejected one stores nothing, not even the workspace
it would have created. ``workspaces.services`` does the work, through the kit's ``Workspace``.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from orkestrel.core import Range
from workspaces import services as files
from workspaces.models import Workspace
from workspaces.services import Edited, FileEdit, FileInfo

from .models import Conversation
from .services import User, get_conversation

__all__ = [
    "conversation_workspace",
    "delete_file",
    "edit_file",
    "ensure_workspace",
    "list_files",
    "put_file",
    "read_file",
    "read_image",
    "read_raw",
    "read_span",
    "upload_file",
]


def _checked(conversation: Conversation, user: User) -> Workspace | None:
    workspace = conversation.workspace
    if workspace is not None and workspace.owner_id != user.pk:
        # A link made by hand in the admin must not expose another user's files.
        raise PermissionDenied("This workspace belongs to another user.")
    return workspace


def conversation_workspace(*, user: User, conversation_id: uuid.UUID | str) -> Workspace | None:
    """The workspace of one of the user's conversations (``None`` when it has none)."""
    return _checked(get_conversation(user=user, conversation_id=conversation_id), user)


def ensure_workspace(*, user: User, conversation_id: uuid.UUID | str) -> Workspace:
    """The conversation's workspace, created and linked when it has none."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    with transaction.atomic():
        # Lock the conversation so two first uploads create one workspace, not two.
        # No ``select_related``: PostgreSQL cannot lock the nullable side of an outer join.
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        workspace = _checked(locked, user)
        if workspace is None:
            workspace = Workspace.objects.create(
                owner_id=locked.owner_id, name=locked.title or "Workspace"
            )
            # ``update`` rather than ``save``: linking a workspace is not conversation activity.
            Conversation.objects.filter(pk=locked.pk).update(workspace=workspace)
    return workspace


def list_files(*, user: User, conversation_id: uuid.UUID | str) -> list[FileInfo]:
    """The files of the conversation's workspace in insertion order (empty without one)."""
    return files.list_files(conversation_workspace(user=user, conversation_id=conversation_id))


def read_file(*, user: User, conversation_id: uuid.UUID | str, path: str) -> dict[str, Any]:
    """One file's description; a text file's includes its ``text`` (``Http404`` if missing)."""
    workspace = conversation_workspace(user=user, conversation_id=conversation_id)
    return files.read_file(workspace, path)


def read_image(*, user: User, conversation_id: uuid.UUID | str, path: str) -> tuple[bytes, str]:
    """An image file's bytes and MIME type (``Http404`` if missing or not an image)."""
    workspace = conversation_workspace(user=user, conversation_id=conversation_id)
    return files.read_image(workspace, path)


def upload_file(*, user: User, conversation_id: uuid.UUID | str, upload: UploadedFile) -> FileInfo:
    """Store an uploaded text file or image in the conversation's workspace
    (``workspaces.services.check_upload`` says what is accepted).

    Raises:
        ValidationError: ``{"file": ...}``; nothing is stored.
        Http404: the conversation is not the user's.
    """
    get_conversation(user=user, conversation_id=conversation_id)  # ownership first
    checked = files.check_upload(upload)
    with transaction.atomic():
        workspace = ensure_workspace(user=user, conversation_id=conversation_id)
        return files.store_upload(workspace, checked)


def read_span(
    *, user: User, conversation_id: uuid.UUID | str, path: str, span: Range
) -> dict[str, Any]:
    """A text file's description with the ``text`` of ``span`` and the clamped ``range``."""
    workspace = conversation_workspace(user=user, conversation_id=conversation_id)
    return files.read_span(workspace, path, span)


def read_raw(*, user: User, conversation_id: uuid.UUID | str, path: str) -> tuple[bytes, str]:
    """A file's bytes and content type (an image's MIME, or UTF-8 ``text/plain``)."""
    workspace = conversation_workspace(user=user, conversation_id=conversation_id)
    return files.read_raw(workspace, path)


def put_file(
    *, user: User, conversation_id: uuid.UUID | str, path: str, content: str | UploadedFile
) -> tuple[FileInfo, bool]:
    """Create or replace the file at ``path`` with text or an upload (checked as the chat's).

    Returns:
        The file's description and whether it was created.

    Raises:
        ValidationError: ``{"path" | "text" | "file": ...}``; nothing is stored.
        Http404: the conversation is not the user's.
    """
    get_conversation(user=user, conversation_id=conversation_id)  # ownership first
    path = files.clean_path(path)
    checked = (
        files.check_text_at(content, path)
        if isinstance(content, str)
        else files.check_upload_at(content, path)
    )
    with transaction.atomic():
        workspace = ensure_workspace(user=user, conversation_id=conversation_id)
        return files.put_file(workspace, path, checked)


def edit_file(*, user: User, conversation_id: uuid.UUID | str, path: str, edit: FileEdit) -> Edited:
    """Apply one edit (ranged write, prepend, append, replace, move) to an existing file.

    Raises:
        Http404: the conversation is not the user's, or no such file.
        ValidationError: the edit does not apply (see ``workspaces.services.edit_file``).
        FileExistsError: a move onto another file's path.
    """
    workspace = conversation_workspace(user=user, conversation_id=conversation_id)
    return files.edit_file(workspace, path, edit)


def delete_file(*, user: User, conversation_id: uuid.UUID | str, path: str) -> None:
    """Delete the file at ``path`` (``Http404`` if there is none)."""
    workspace = conversation_workspace(user=user, conversation_id=conversation_id)
    files.remove_file(workspace, path)
