"""The operators' admin for conversations: read-only transcripts, runs and authority decisions.

Conversations are written by the store and the runtime, never by hand: the change page shows
the transcript (each section's summary over its collapsible originals, then the live
messages), the runs and the authority decisions. Only the title can be edited; nothing can be
added or deleted here.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import Count, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .approvals import ApprovalRefused, Decision, decide
from .models import (
    AuthorityDecision,
    Conversation,
    Message,
    Response,
    Run,
    Section,
    ToolApproval,
    ToolFailure,
)

# A transcript page stays renderable however long the history: the newest live messages and
# the first originals of each section are shown, with a count of the rest.
LIVE_LIMIT = 500
ORIGINALS_LIMIT = 200


class ReadOnlyMixin:
    """No add, change or delete: operators look, the application writes."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def pretty_json(value: Any) -> SafeString:
    """``value`` as indented JSON in a ``<pre>`` (escaped)."""
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


def usage_text(row: Conversation | Run) -> str:
    return f"{row.usage_total} ({row.usage_prompt} prompt + {row.usage_completion} completion)"


class RunInline(ReadOnlyMixin, admin.TabularInline):
    model = Run
    extra = 0
    ordering = ["-created"]
    fields = ("status", "stop_reason", "usage", "created", "started", "finished", "took", "error")
    readonly_fields = fields

    @admin.display(description="tokens")
    def usage(self, run: Run) -> str:
        return usage_text(run)

    @admin.display(description="duration")
    def took(self, run: Run) -> str:
        return "" if run.duration is None else f"{run.duration:.2f} s"


class DecisionInline(ReadOnlyMixin, admin.TabularInline):
    model = AuthorityDecision
    extra = 0
    fields = (
        "created",
        "run",
        "tool_name",
        "tool_call_id",
        "call_arguments",
        "rule_label",
        "zone",
        "allowed",
        "reason",
    )
    readonly_fields = fields
    verbose_name_plural = "authority decisions"

    @admin.display(description="arguments")
    def call_arguments(self, decision: AuthorityDecision) -> SafeString:
        return pretty_json(decision.arguments)


class FailureInline(ReadOnlyMixin, admin.TabularInline):
    model = ToolFailure
    extra = 0
    fields = ("created", "run", "tool_name", "tool_call_id", "error")
    readonly_fields = fields
    verbose_name_plural = "tool failures"


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "owner",
        "profile",
        "origin",
        "message_count",
        "usage_total",
        "updated",
    ]
    list_filter = ["origin", "profile", "updated"]
    list_select_related = ["owner", "profile"]
    search_fields = ["title", "owner__username", "summary"]
    date_hierarchy = "updated"
    fieldsets = [
        (
            None,
            {"fields": ["title", "id", "owner", "profile", "origin", "workspace", "active_skills"]},
        ),
        ("Usage", {"fields": ["usage", "created", "updated"]}),
        ("Transcript", {"fields": ["rollup", "transcript"]}),
    ]
    readonly_fields = [
        "id",
        "owner",
        "profile",
        "origin",
        "workspace",
        "active_skills",
        "usage",
        "created",
        "updated",
        "rollup",
        "transcript",
    ]
    inlines = [RunInline, DecisionInline, FailureInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        # A correlated count: evaluated for the rows of one page, not grouped over every message.
        count = (
            Message.objects.filter(conversation=OuterRef("pk"))
            .order_by()
            .values("conversation")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return super().get_queryset(request).annotate(message_total=Coalesce(Subquery(count), 0))

    @admin.display(description="messages", ordering="message_total")
    def message_count(self, conversation: Conversation) -> int:
        return conversation.message_total  # type: ignore[attr-defined]

    @admin.display(description="tokens")
    def usage(self, conversation: Conversation) -> str:
        return usage_text(conversation)

    @admin.display(description="active skills")
    def active_skills(self, conversation: Conversation) -> str:
        return ", ".join(conversation.skills or ()) or "(none)"

    @admin.display(description="summary")
    def rollup(self, conversation: Conversation) -> str:
        return conversation.summary or "(not compacted yet)"

    @admin.display(description="messages")
    def transcript(self, conversation: Conversation) -> SafeString:
        ordered = Message.objects.order_by("position", "pk")
        sections = conversation.sections.order_by("position").prefetch_related(
            Prefetch("messages", queryset=ordered, to_attr="originals")
        )
        live = conversation.messages.filter(section__isnull=True)
        total = live.count()
        newest = list(live.order_by("-position", "-pk")[:LIVE_LIMIT])[::-1]
        return render_to_string(
            "admin/conversations/transcript.html",
            {
                "sections": [_section_view(section) for section in sections],
                "live": [_message_view(message) for message in newest],
                "hidden": total - len(newest),
            },
        )


def _section_view(section: Section) -> dict[str, Any]:
    originals = section.originals  # type: ignore[attr-defined]
    return {
        "number": section.position + 1,
        "id": section.section_id,
        "summary": section.summary,
        "count": len(originals),
        "messages": [_message_view(message) for message in originals[:ORIGINALS_LIMIT]],
        "hidden": max(0, len(originals) - ORIGINALS_LIMIT),
    }


def _message_view(message: Message) -> dict[str, Any]:
    return {
        "id": message.message_id,
        "role": message.role,
        "content": message.content,
        "calls": [
            {
                "name": call.get("name"),
                "id": call.get("id"),
                "arguments": _dump(call.get("arguments")),
            }
            for call in (message.calls or [])
            if isinstance(call, dict)
        ],
        "images": len(message.images or []),
        "tool_call_id": message.tool_call_id,
        "usage": _dump(message.usage) if message.usage else "",
        "thinking": message.thinking,
        "thought_for": _seconds(message.thinking_ms),
    }


def _seconds(ms: int | None) -> str:
    return "" if ms is None else f"{ms / 1000:.1f} s"


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "conversation", "status", "stop_reason", "usage_total", "created"]
    list_filter = ["status", "conversation__origin", "created"]
    list_select_related = ["conversation"]
    search_fields = ["conversation__title", "error"]
    date_hierarchy = "created"


@admin.register(AuthorityDecision)
class AuthorityDecisionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["created", "tool_name", "allowed", "zone", "rule_label", "conversation"]
    list_filter = ["allowed", "zone", "created"]
    list_select_related = ["conversation"]
    search_fields = ["tool_name", "rule_label", "reason"]
    date_hierarchy = "created"


@admin.register(ToolApproval)
class ToolApprovalAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Calls an ``ask`` rule held: who decided them and when. An operator decides the pending
    ones here (those whose rule's approver is staff wait for this); the conversation goes on
    within seconds (the next sweep)."""

    list_display = [
        "created",
        "tool_name",
        "status",
        "approver",
        "rule_label",
        "decided_by",
        "decided",
        "conversation",
    ]
    list_filter = ["status", "approver", "created"]
    list_select_related = ["conversation", "decided_by"]
    search_fields = ["tool_name", "rule_label", "reason", "conversation__title"]
    date_hierarchy = "created"
    actions = ["approve", "deny"]

    @admin.action(description="Approve the selected pending calls")
    def approve(self, request: HttpRequest, queryset: QuerySet[ToolApproval]) -> None:
        self._decide(request, queryset, Decision(True))

    @admin.action(description="Deny the selected pending calls")
    def deny(self, request: HttpRequest, queryset: QuerySet[ToolApproval]) -> None:
        self._decide(request, queryset, Decision(False, "denied by an operator"))

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[ToolApproval], decision: Decision
    ) -> None:
        done, operator = 0, request.user.pk
        assert operator is not None  # the admin lets only a signed-in operator in
        for pk in queryset.filter(status=ToolApproval.Status.PENDING).values_list("pk", flat=True):
            try:
                decide(
                    pk,
                    decision,
                    user_id=operator,
                    username=request.user.get_username(),
                    operator=True,
                )
            except (LookupError, ApprovalRefused):
                continue  # decided meanwhile
            done += 1
        self.message_user(request, f"{done} call(s) decided; their conversations go on shortly.")


@admin.register(ToolFailure)
class ToolFailureAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["created", "tool_name", "tool_call_id", "conversation"]
    list_filter = ["tool_name", "created"]
    list_select_related = ["conversation"]
    search_fields = ["tool_name", "error"]
    date_hierarchy = "created"


@admin.register(Response)
class ResponseAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The ids the Responses API handed out, each naming a run of a conversation."""

    list_display = ["id", "owner", "model", "stored", "run", "created"]
    list_filter = ["stored", "created"]
    list_select_related = ["owner", "run"]
    search_fields = ["id", "owner__username", "model"]
    date_hierarchy = "created"
