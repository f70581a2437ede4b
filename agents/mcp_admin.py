"""The admin of MCP servers: their settings, who may use them, and what they offer.

**Check connection** connects, lists the tools and says how many; **Refresh tools** does
the same and stores the listing on the row (shown on its page; a run's fallback while the
server is down). Neither shows a token: the bearer token stays in its environment variable.
A server that takes each user's own credential is looked at with the operator's own (entered
in Settings → MCP servers, like any user's); the admin never shows users' credentials, only
how many entered one.
"""

from __future__ import annotations

import os

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from .admin_base import JSON_OVERRIDES, OperatorAdmin
from .mcp.check import check_server, endpoint_as, refresh_server
from .mcp.endpoint import OfferedTool, endpoint_of
from .mcp.names import tool_name
from .models import McpServer

__all__ = ["McpServerAdmin"]


@admin.register(McpServer)
class McpServerAdmin(OperatorAdmin):
    list_display = ["name", "address", "enabled", "auth_status", "tool_count", "refreshed"]
    list_filter = ["enabled", "auth"]
    list_editable = ["enabled"]
    search_fields = ["name", "url"]
    filter_horizontal = ["profiles", "scopes", "users", "groups"]
    readonly_fields = ["auth_status", "offered_tools", "refreshed", "created", "updated"]
    actions = ["check_connection", "refresh_tools"]
    formfield_overrides = JSON_OVERRIDES
    fieldsets = [
        (None, {"fields": ["name", "url", "enabled", "headers"]}),
        (
            "Or a stdio process",
            {
                "fields": ["command", "network"],
                "description": "Instead of a URL: a program this server starts, sandboxed.",
            },
        ),
        ("Authentication", {"fields": ["auth", "bearer_env", "auth_status"]}),
        ("Limits", {"fields": ["connect_timeout", "call_timeout"]}),
        ("Tools", {"fields": ["allowed_tools", "safety", "offered_tools", "refreshed"]}),
        ("Used by", {"fields": ["profiles", "scopes"]}),
        (
            "Access",
            {
                "fields": ["users", "groups"],
                "description": "Whose runs may use it: everyone when both are empty.",
            },
        ),
        ("History", {"fields": ["created", "updated"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpServer]:
        return super().get_queryset(request).annotate(credential_count=Count("credentials"))

    @admin.display(description="credentials")
    def auth_status(self, server: McpServer) -> str:
        if server.auth in (McpServer.Auth.USER_TOKEN, McpServer.Auth.OAUTH):
            count = getattr(server, "credential_count", None)
            if count is None:
                count = server.credentials.count()
            verb = "connected" if server.auth == McpServer.Auth.OAUTH else "entered theirs"
            return f"per user: {count} user{'s have' if count != 1 else ' has'} {verb}"
        if server.auth != McpServer.Auth.BEARER_ENV or not server.bearer_env:
            return "none"
        state = "set" if os.environ.get(server.bearer_env) else "not set"
        return f"{server.bearer_env}: {state}"

    @admin.display(description="address", ordering="url")
    def address(self, server: McpServer) -> str:
        if server.command:
            return "stdio: " + " ".join(str(part) for part in server.command)[:120]
        return server.url

    @admin.display(description="tools")
    def tool_count(self, server: McpServer) -> str:
        return str(len(server.offered)) if server.refreshed else "not listed yet"

    @admin.display(description="offered tools")
    def offered_tools(self, server: McpServer) -> SafeString | str:
        endpoint = endpoint_of(server, related=False)
        if not endpoint.offered:
            return "Not listed yet: use Refresh tools."
        rows = (
            (
                tool_name(server.name, tool.name),
                "read-only" if endpoint.safety.get(tool.name, tool.read_only is True) else "write",
                "" if endpoint.allows(tool.name) else " (not allowed)",
                tool.description,
            )
            for tool in endpoint.offered
        )
        return format_html(
            "<ul>{}</ul>", format_html_join("", "<li><code>{}</code> — {}{}: {}</li>", rows)
        )

    @admin.action(description="Check connection of selected MCP servers")
    def check_connection(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            result = check_server(endpoint_as(server, request.user.pk))
            self._report(request, server, result.ok, result.detail, result.tools)

    @admin.action(description="Refresh tools of selected MCP servers")
    def refresh_tools(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            result = refresh_server(server, request.user.pk)
            self._report(request, server, result.ok, result.detail, result.tools)

    def _report(
        self,
        request: HttpRequest,
        server: McpServer,
        ok: bool,
        detail: str,
        tools: tuple[OfferedTool, ...],
    ) -> None:
        names = ", ".join(tool_name(server.name, tool.name) for tool in tools)
        text = f"{server.name}: {'OK' if ok else 'failed'}: {detail}"
        self.message_user(
            request,
            f"{text}: {names}" if names else text,
            messages.SUCCESS if ok else messages.ERROR,
        )
