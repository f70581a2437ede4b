"""Models of the workspaces app: a user's workspaces and the files in them.

A ``WorkspaceFile`` is one row per path, holding either text (``text`` + ``language``) or
binary content (base64 ``data`` + ``mime``), never both: the kit's ``File`` in relational
form. ``to_file`` / ``file_fields`` convert between the two; the store in ``stores.py`` keeps
a workspace's rows in step with the kit's ``WorkspaceSnapshot``.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from orkestrel.core.files import (
    BINARY_MIMES,
    FILE_STATES,
    BinaryContent,
    File,
    FileDict,
    TextContent,
    create_file,
    file_to_dict,
    is_binary,
)

__all__ = ["Workspace", "WorkspaceFile", "file_fields"]

# Sorted once so the choices, the check constraint and the migration agree.
_MIMES = sorted(BINARY_MIMES)


class Workspace(models.Model):
    """A user's working set of files; its ``id`` is the kit workspace id (``str(id)``)."""

    id = models.UUIDField("id", primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="workspaces",
        verbose_name="owner",
    )
    name = models.CharField("name", max_length=200, blank=True)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "workspace"
        verbose_name_plural = "workspaces"
        ordering = ["-updated"]
        indexes = [models.Index(fields=["owner", "-updated"], name="workspace_owner_updated_idx")]

    def __str__(self) -> str:
        return self.name or f"Workspace {str(self.id)[:8]}"


class WorkspaceFile(models.Model):
    """One file of a workspace, text or binary, in insertion order (``position``)."""

    class State(models.TextChoices):
        CREATED = "created", "created"
        MODIFIED = "modified", "modified"
        LOADED = "loaded", "loaded"
        DELETED = "deleted", "deleted"

    workspace = models.ForeignKey(
        Workspace,
        on_delete=models.CASCADE,
        related_name="files",
        verbose_name="workspace",
        # The (workspace, path) unique index and the order index both lead with it.
        db_index=False,
    )
    path = models.CharField("path", max_length=1024)
    position = models.BigIntegerField("position", help_text="Insertion order in the workspace.")
    text = models.TextField("text", null=True, blank=True, help_text="Null for a binary file.")
    language = models.CharField("language", max_length=64, blank=True)
    data = models.TextField(
        "data", null=True, blank=True, help_text="Base64 content of a binary file; else null."
    )
    mime = models.CharField(
        "MIME type", max_length=32, blank=True, choices=[(mime, mime) for mime in _MIMES]
    )
    state = models.CharField("state", max_length=16, choices=State.choices, default=State.CREATED)
    size = models.PositiveBigIntegerField("size (bytes)", default=0)
    lines = models.PositiveIntegerField("lines", default=0)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "workspace file"
        verbose_name_plural = "workspace files"
        ordering = ["workspace_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "path"], name="workspace_file_path_unique"
            ),
            models.CheckConstraint(
                condition=(Q(text__isnull=False) & Q(data__isnull=True))
                | (Q(text__isnull=True) & Q(data__isnull=False)),
                name="workspace_file_text_xor_data",
                violation_error_message="A file holds either text or binary data, not both.",
            ),
            models.CheckConstraint(
                condition=Q(data__isnull=True) | Q(mime__in=_MIMES),
                name="workspace_file_binary_mime",
            ),
            models.CheckConstraint(
                condition=Q(text__isnull=True) | ~Q(language=""),
                name="workspace_file_text_language",
            ),
            models.CheckConstraint(
                condition=Q(state__in=sorted(FILE_STATES)),
                name="workspace_file_state_valid",
            ),
            models.CheckConstraint(condition=~Q(path=""), name="workspace_file_path_set"),
        ]
        indexes = [models.Index(fields=["workspace", "position"], name="workspace_file_order_idx")]

    def __str__(self) -> str:
        return self.path

    @property
    def is_binary(self) -> bool:
        return self.data is not None

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        if "\x00" in self.path:
            errors["path"] = "A path cannot contain NUL."
        if (self.text is None) == (self.data is None):
            errors["text"] = "Give either text or binary data, not both or neither."
        elif self.data is not None:
            if not is_binary({"data": self.data, "mime": self.mime}):
                if self.mime not in BINARY_MIMES:
                    errors["mime"] = f"Binary files need one of: {', '.join(_MIMES)}."
                else:
                    errors["data"] = "Binary data must be canonical padded base64."
        elif not self.language:
            errors["language"] = "A text file needs a language (use 'text' when unknown)."
        if errors:
            raise ValidationError(errors)

    def to_file(self) -> File:
        """The kit's immutable ``File`` for this row (size and lines re-derived)."""
        content: TextContent | BinaryContent
        if self.data is not None:
            content = BinaryContent(self.data, self.mime)  # type: ignore[arg-type]
        else:
            content = TextContent(self.text or "", self.language or "text")
        return create_file(self.path, content, self.state)  # type: ignore[arg-type]

    def to_dict(self) -> FileDict:
        """The kit's JSON file dict (one element of a workspace snapshot)."""
        return file_to_dict(self.to_file())


def file_fields(file: File) -> dict[str, Any]:
    """The ``WorkspaceFile`` column values for a kit ``File`` (everything but ids and order)."""
    fields: dict[str, Any] = {
        "path": file.path,
        "state": file.state,
        "size": file.size,
        "lines": file.lines,
    }
    content = file.content
    if isinstance(content, BinaryContent):
        fields.update(text=None, language="", data=content.data, mime=content.mime)
    else:
        fields.update(text=content.text, language=content.language, data=None, mime="")
    return fields
