"""The admin of quotas (an operator's limits) and of the usage ledger (read only: an account is
not edited). The ledger's list links to the usage dashboard (``/admin/usage/``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse

from .admin_base import OperatorAdmin
from .models import Quota, UsageEntry

__all__ = ["QuotaAdmin", "UsageEntryAdmin"]

DASHBOARD = "/admin/usage/"


@admin.register(Quota)
class QuotaAdmin(OperatorAdmin):
    list_display = ["__str__", "period", "max_tokens", "max_cost", "action"]
    list_filter = ["period", "action"]
    autocomplete_fields = ["user", "group"]
    raw_id_fields = ["api_key"]
    fieldsets = [
        (
            "Who it limits (one of them)",
            {
                "fields": ["user", "group", "api_key"],
                "description": "A group's members count together: the limit is the team's.",
            },
        ),
        ("Limit", {"fields": ["period", "max_tokens", "max_cost", "action"]}),
    ]


@admin.register(UsageEntry)
class UsageEntryAdmin(admin.ModelAdmin):
    list_display = [
        "created",
        "kind",
        "outcome",
        "user",
        "key_name",
        "profile",
        "model",
        "total",
        "cost",
        "duration_ms",
    ]
    list_filter = ["kind", "outcome", "profile", "model"]
    list_select_related = ["user"]
    search_fields = ["source", "key_name", "user__username"]
    date_hierarchy = "created"
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        context = {**(extra_context or {}), "dashboard_url": DASHBOARD}
        return super().changelist_view(request, context)  # type: ignore[return-value]
