"""The operators' admin for workspaces: each workspace with its files, read-only.

Files are written by the workspace store (agents and the REST API edit them); operators see
them here and may rename a workspace, nothing more.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from .models import Workspace, WorkspaceFile


class WorkspaceFileInline(admin.TabularInline):
    model = WorkspaceFile
    extra = 0
    ordering = ["position"]
    fields = ("path", "kind", "size", "lines", "state", "updated")
    readonly_fields = fields
    # The content stays out of the page: a file may be megabytes of text or base64.
    show_change_link = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkspaceFile]:
        return super().get_queryset(request).defer("text", "data")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="language / MIME")
    def kind(self, file: WorkspaceFile) -> str:
        return file.mime or file.language


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["__str__", "owner", "file_count", "total_size", "updated"]
    list_select_related = ["owner"]
    search_fields = ["name", "owner__username", "files__path"]
    fields = ["name", "id", "owner", "created", "updated"]
    readonly_fields = ["id", "owner", "created", "updated"]
    inlines = [WorkspaceFileInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Workspace]:
        # Correlated: evaluated for the rows of one page, not grouped over every file.
        files = (
            WorkspaceFile.objects.filter(workspace=OuterRef("pk")).order_by().values("workspace")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                file_total=Coalesce(Subquery(files.annotate(n=Count("pk")).values("n")), 0),
                byte_total=Coalesce(Subquery(files.annotate(n=Sum("size")).values("n")), 0),
            )
        )

    @admin.display(description="files", ordering="file_total")
    def file_count(self, workspace: Workspace) -> int:
        return workspace.file_total  # type: ignore[attr-defined]

    @admin.display(description="size (bytes)", ordering="byte_total")
    def total_size(self, workspace: Workspace) -> int:
        return workspace.byte_total or 0  # type: ignore[attr-defined]
