"""The operators' admin for the agents app: endpoints, tools, policies, scopes, profiles.

No secret is ever displayed: endpoints show whether their key variable is set, not the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.db.models import Count, Max, QuerySet
from django.forms import Field as FormField
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from .admin_base import JSON_OVERRIDES, OperatorAdmin, readable_help
from .authority import evaluate_policy
from .connection import check_endpoint
from .forms import (
    AuthorityRuleForm,
    EndpointForm,
    EvaluateCallForm,
    ProfileForm,
    ScopeForm,
)
from .models import (
    AgentJob,
    AgentProfile,
    ApiKey,
    AuthorityPolicy,
    AuthorityRule,
    Instruction,
    PromptTemplate,
    ProviderEndpoint,
    Scope,
    Skill,
    Tool,
    bump_config_revision,
)
from .models.keys import SCOPES, ApiKeyQuerySet, parse_words
from .sandbox import Sandbox, detect_sandbox

# The scripts that show a tool form only its kind's fields (same-origin: the CSP has no inline).
TOOL_KIND_SCRIPT = "orkestrel/admin/tool-kind.js"


@admin.register(ProviderEndpoint)
class ProviderEndpointAdmin(OperatorAdmin):
    form = EndpointForm
    list_display = [
        "name",
        "kind",
        "enabled",
        "base_url",
        "api_key_status",
        "model_count",
        "updated",
    ]
    list_filter = ["kind", "enabled"]
    search_fields = ["name", "base_url"]
    readonly_fields = ["api_key_status", "created", "updated"]
    formfield_overrides = JSON_OVERRIDES
    actions = ["check_connection"]
    change_form_template = "admin/agents/providerendpoint/change_form.html"
    fieldsets = [
        (None, {"fields": ["name", "kind", "enabled", "base_url", "models", "document_models"]}),
        ("Credentials", {"fields": ["api_key_env", "api_key_status"]}),
        (
            "Limits",
            {
                "fields": [
                    "connect_timeout",
                    "first_token_timeout",
                    "stream_idle_timeout",
                    "read_timeout",
                    "max_retries",
                ]
            },
        ),
        ("Prices", {"fields": ["prices"]}),
        ("History", {"fields": ["created", "updated"]}),
    ]

    @admin.display(description="API key")
    def api_key_status(self, endpoint: ProviderEndpoint) -> str:
        if not endpoint.api_key_env:
            return "none needed"
        state = "set" if endpoint.api_key_set else "not set"
        return f"{endpoint.api_key_env}: {state}"

    @admin.display(description="models")
    def model_count(self, endpoint: ProviderEndpoint) -> str:
        return str(len(endpoint.models)) if endpoint.models else "any"

    @admin.action(description="Check connection of selected endpoints")
    def check_connection(self, request: HttpRequest, queryset: QuerySet[ProviderEndpoint]) -> None:
        for endpoint in queryset:
            self._report_check(request, endpoint)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.check_connection_view)
        name = f"{self.opts.app_label}_{self.opts.model_name}_check_connection"
        return [path("<path:object_id>/check-connection/", view, name=name), *super().get_urls()]

    def check_connection_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The change page's Check connection button: check the saved endpoint, then go back
        to its page, the outcome among the admin's messages."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        endpoint = self.get_object(request, unquote(object_id))
        if endpoint is None:
            raise Http404("No such provider endpoint.")
        if not self.has_view_permission(request, endpoint):
            raise PermissionDenied
        self._report_check(request, endpoint)
        change = f"admin:{self.opts.app_label}_{self.opts.model_name}_change"
        return HttpResponseRedirect(reverse(change, args=[endpoint.pk]))

    def _report_check(self, request: HttpRequest, endpoint: ProviderEndpoint) -> None:
        result = check_endpoint(endpoint)
        level = messages.SUCCESS if result.ok else messages.ERROR
        verdict = "OK" if result.ok else "failed"
        self.message_user(request, f"{endpoint.name}: {verdict}: {result.detail}", level)


@admin.register(Tool)
class ToolAdmin(OperatorAdmin):
    list_display = ["name", "kind", "enabled", "safe", "timeout", "summary", "parameter_list"]
    list_filter = ["kind", "enabled", "safe"]
    list_editable = ["enabled"]
    search_fields = ["name", "summary", "description", "program"]
    readonly_fields = ["sandbox_status", "created", "updated"]
    formfield_overrides = JSON_OVERRIDES
    # What confines command tools here (tests seat a machine without a sandbox).
    sandbox: Callable[[], Sandbox] = staticmethod(detect_sandbox)
    fieldsets = [
        (None, {"fields": ["name", "kind", "enabled", "safe", "timeout"]}),
        ("Description", {"fields": ["summary", "description", "parameters"]}),
        (
            "HTTP",
            {
                "classes": ["tool-kind", "tool-kind-http"],
                "fields": [
                    "http_method",
                    "url_template",
                    "header_env",
                    "system_field",
                    "follow_cross_origin_redirects",
                ],
            },
        ),
        (
            "Command",
            {
                "classes": ["tool-kind", "tool-kind-command"],
                "fields": [
                    "program",
                    "argv",
                    "workdir",
                    "output_limit",
                    "allow_network",
                    "sandbox_status",
                ],
            },
        ),
        ("History", {"fields": ["created", "updated"]}),
    ]

    class Media:
        js = [TOOL_KIND_SCRIPT]

    @admin.display(description="parameters")
    def parameter_list(self, tool: Tool) -> str:
        return ", ".join(tool.parameter_names()) or "none"

    @admin.display(description="sandbox")
    def sandbox_status(self, tool: Tool | None) -> str:
        sandbox = self.sandbox()
        if sandbox.available:
            return f"{sandbox.description}: command tools run confined"
        return (
            f"none ({sandbox.description}): command tools that are not safe are refused; "
            "safe ones run unconfined"
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if request.method == "GET":
            # A command tool's own safety is a write: unmarked ones are refused too.
            commands = Tool.objects.filter(kind=Tool.Kind.COMMAND, enabled=True)
            refused = commands.exclude(safe=True)
            names = list(refused.values_list("name", flat=True)[:20])
            if names:
                self._warn_without_sandbox(request, ", ".join(names))
        return super().changelist_view(request, extra_context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "GET":
            tool = self.get_object(request, unquote(object_id))
            if tool is not None and tool.kind == Tool.Kind.COMMAND and tool.safe is not True:
                self._warn_without_sandbox(request, tool.name)
        return super().change_view(request, object_id, form_url, extra_context)

    def _warn_without_sandbox(self, request: HttpRequest, names: str) -> None:
        """Say that command tools that write will be refused, where there is no sandbox."""
        sandbox = self.sandbox()
        if sandbox.available:
            return
        messages.warning(
            request,
            f"No OS sandbox on this server ({sandbox.description}). Command tools that are "
            f"not safe run only under one, so calls to {names} are refused; mark a tool always "
            "safe only if it changes nothing.",
        )


class AuthorityRuleInline(admin.StackedInline):
    """Rules stacked, a few fields to a line: a table of all seven is wider than the page."""

    model = AuthorityRule
    form = AuthorityRuleForm
    ordering = ["position"]
    extra = 1
    formfield_overrides = JSON_OVERRIDES
    classes = ["authority-rules"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    ("position", "tool_glob", "zone"),
                    ("verdict", "approver"),
                    "conditions",
                    "reason",
                ]
            },
        )
    ]

    def formfield_for_dbfield(
        self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> FormField | None:
        return readable_help(super().formfield_for_dbfield(db_field, request, **kwargs))


@admin.register(AuthorityPolicy)
class AuthorityPolicyAdmin(OperatorAdmin):
    list_display = ["name", "fallback_allowed", "fallback_zone", "rule_count"]
    list_filter = ["fallback_allowed"]
    search_fields = ["name", "rules__tool_glob", "rules__reason"]
    inlines = [AuthorityRuleInline]
    change_form_template = "admin/agents/authoritypolicy/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuthorityPolicy]:
        return super().get_queryset(request).annotate(rule_total=Count("rules", distinct=True))

    @admin.display(description="rules", ordering="rule_total")
    def rule_count(self, policy: AuthorityPolicy) -> int:
        return policy.rule_total  # type: ignore[attr-defined]

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.evaluate_view)
        name = f"{self.opts.app_label}_{self.opts.model_name}_evaluate"
        return [path("<path:object_id>/evaluate/", view, name=name), *super().get_urls()]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is AuthorityRule:
            _free_positions(form.instance, formset)
        super().save_formset(request, form, formset, change)

    def evaluate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Try a tool call against the policy: the decision and the rule that made it."""
        policy = self.get_object(request, unquote(object_id))
        if policy is None:
            raise Http404("No such authority policy.")
        if not self.has_view_permission(request, policy):
            raise PermissionDenied
        form = EvaluateCallForm(request.POST or None)
        outcome = None
        if request.method == "POST" and form.is_valid():
            decision, rule = evaluate_policy(
                policy, form.cleaned_data["tool_name"], form.cleaned_data["arguments"]
            )
            outcome = {
                "decision": decision,
                "rule": rule,
                "arguments": json.dumps(form.cleaned_data["arguments"], indent=2),
            }
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": policy,
            "title": f"Evaluate a call against {policy}",
            "form": form,
            "outcome": outcome,
            "rules": list(policy.rules.order_by("position")),
            "change_url": reverse(
                f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[policy.pk]
            ),
        }
        return TemplateResponse(request, "admin/agents/authoritypolicy/evaluate.html", context)


def _free_positions(policy: AuthorityPolicy, formset: Any) -> None:
    """Move rules whose position changes (or that go) out of the way before the rows save.

    Saving rows one by one would otherwise hit the unique (policy, position) constraint when
    two rules swap places. The admin's change view runs in a transaction, and so does this.
    """
    moving = [
        row.instance.pk
        for row in formset.initial_forms
        if row.instance.pk and ("position" in row.changed_data or row in formset.deleted_forms)
    ]
    if not moving or policy.pk is None:
        return
    with transaction.atomic():
        stored = AuthorityRule.objects.filter(policy=policy).aggregate(top=Max("position"))
        wanted = [row.cleaned_data.get("position") or 0 for row in formset.forms if row.is_valid()]
        top = max([stored["top"] or 0, *wanted]) + 1
        for offset, pk in enumerate(moving):
            AuthorityRule.objects.filter(pk=pk).update(position=top + offset)
        bump_config_revision()  # ``update()`` sends no signal


@admin.register(Scope)
class ScopeAdmin(OperatorAdmin):
    form = ScopeForm
    list_display = ["name", "instruction_list", "tool_list", "file_list"]
    search_fields = ["name"]
    formfield_overrides = JSON_OVERRIDES

    @staticmethod
    def _describe(value: list[str] | None) -> str:
        if value is None:
            return "all"
        return ", ".join(value) if value else "none"

    @admin.display(description="instructions")
    def instruction_list(self, scope: Scope) -> str:
        return self._describe(scope.instructions)

    @admin.display(description="tools")
    def tool_list(self, scope: Scope) -> str:
        return self._describe(scope.tools)

    @admin.display(description="files")
    def file_list(self, scope: Scope) -> str:
        return self._describe(scope.files)


@admin.register(Instruction)
class InstructionAdmin(OperatorAdmin):
    list_display = ["name", "priority", "enabled", "excerpt"]
    list_filter = ["enabled"]
    list_editable = ["enabled"]
    search_fields = ["name", "content"]

    @admin.display(description="content")
    def excerpt(self, instruction: Instruction) -> str:
        text = " ".join(instruction.content.split())
        return text if len(text) <= 80 else f"{text[:79]}…"


@admin.register(Skill)
class SkillAdmin(OperatorAdmin):
    """Instructions offered as skills: off until a conversation activates one (``/skill
    name`` or the model's ``skills`` tool), then in each of its later runs."""

    list_display = ["name", "description", "enabled"]
    list_select_related = ["instruction"]
    search_fields = ["instruction__name", "description"]
    autocomplete_fields = ["instruction"]
    ordering = ["instruction__name"]

    @admin.display(description="name", ordering="instruction__name")
    def name(self, skill: Skill) -> str:
        return skill.instruction.name

    @admin.display(description="offered", boolean=True, ordering="instruction__enabled")
    def enabled(self, skill: Skill) -> bool:
        return skill.instruction.enabled


@admin.register(PromptTemplate)
class PromptTemplateAdmin(OperatorAdmin):
    """``/name`` shortcuts: the composer lists the enabled ones as the user types ``/``."""

    list_display = ["__str__", "description", "enabled", "updated"]
    list_filter = ["enabled"]
    list_editable = ["enabled"]
    search_fields = ["name", "description", "text"]
    fields = ["name", "description", "text", "enabled"]


@admin.register(AgentProfile)
class AgentProfileAdmin(OperatorAdmin):
    form = ProfileForm
    list_display = [
        "name",
        "slug",
        "model",
        "enabled",
        "is_default",
        "scope",
        "authority_policy",
        "updated",
    ]
    list_filter = ["enabled", "is_default", "read_only", "thinking", "scope", "authority_policy"]
    list_select_related = ["scope", "authority_policy"]
    search_fields = ["name", "slug", "model", "description"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["tools", "instructions", "users", "groups", "may_delegate_to"]
    readonly_fields = ["created", "updated"]
    actions = ["make_default"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "description", "enabled", "is_default"]}),
        ("Model", {"fields": ["model", "thinking", "system_prompt"]}),
        ("Bounds", {"fields": ["limit", "timeout", "token_budget"]}),
        ("Context", {"fields": ["context_window", "keep", "sections_cap"]}),
        (
            "Capabilities",
            {
                "fields": [
                    "tools",
                    "instructions",
                    "scope",
                    "authority_policy",
                    "approval_timeout",
                    "approval_timeout_action",
                    "read_only",
                    "may_delegate_to",
                ]
            },
        ),
        ("Access", {"fields": ["users", "groups"]}),
        (
            "Retention",
            {
                "classes": ["collapse"],
                "description": "Days its records are kept: empty follows the setting "
                "(ORKESTREL_RETAIN_*_DAYS), 0 keeps them for ever (README, Retention).",
                "fields": [
                    "retain_conversations_days",
                    "retain_runs_days",
                    "retain_run_events_days",
                    "retain_approvals_days",
                    "retain_decisions_days",
                    "retain_tool_failures_days",
                    "retain_jobs_days",
                ],
            },
        ),
        ("History", {"fields": ["created", "updated"]}),
    ]

    @admin.action(description="Make the selected profile the default")
    def make_default(self, request: HttpRequest, queryset: QuerySet[AgentProfile]) -> None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one profile.", messages.ERROR)
            return
        profile = queryset.get()
        with transaction.atomic():
            # Clear first: the database allows one default at a time.
            AgentProfile.objects.filter(is_default=True).exclude(pk=profile.pk).update(
                is_default=False
            )
            AgentProfile.objects.filter(pk=profile.pk).update(is_default=True)
            bump_config_revision()  # ``update()`` sends no signal
        self.message_user(
            request, format_html("{} is now the default profile.", profile.name), messages.SUCCESS
        )


class ApiKeyForm(forms.ModelForm):
    """A key's scopes as checkboxes, its profiles as slugs; the rest is read-only."""

    scopes = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in SCOPES],
        widget=forms.CheckboxSelectMultiple,
        help_text="read: every GET; run: start, cancel, retry, decide, and /v1; keys: create "
        "and revoke keys.",
    )

    class Meta:
        model = ApiKey
        fields = ["scopes", "profiles"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["scopes"] = self.instance.scope_list

    def clean_scopes(self) -> str:
        return " ".join(scope for scope in SCOPES if scope in self.cleaned_data["scopes"])

    def clean_profiles(self) -> str:
        slugs = parse_words(self.cleaned_data["profiles"])
        known = set(AgentProfile.objects.filter(slug__in=slugs).values_list("slug", flat=True))
        unknown = [slug for slug in slugs if slug not in known]
        if unknown:
            raise forms.ValidationError(f"No profile {unknown[0]!r}.")
        return " ".join(slugs)


@admin.register(ApiKey)
class ApiKeyAdmin(OperatorAdmin):
    """Read-only but for revoking and narrowing: a key is only ever issued to its user, never
    typed in here; an operator may change its scopes and profiles.

    The digest is never shown. Deleting stays possible (deleting a user deletes their keys,
    and the admin asks for this permission then); the changelist offers revoking instead.
    """

    form = ApiKeyForm

    list_display = [
        "name",
        "user",
        "display_prefix",
        "created",
        "last_used",
        "expires",
        "revoked",
        "status",
        "scopes",
        "profiles",
    ]
    list_filter = [("revoked", admin.EmptyFieldListFilter), "created", "expires"]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = (
        "user",
        "name",
        "display_prefix",
        "created",
        "last_used",
        "expires",
        "revoked",
    )
    fields = (*readonly_fields, "scopes", "profiles")
    actions = ["revoke_keys"]

    @admin.display(description="prefix", ordering="prefix")
    def display_prefix(self, key: ApiKey) -> str:
        return key.display_prefix

    @admin.display(description="status")
    def status(self, key: ApiKey) -> str:
        return key.status()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents.change_apikey")

    def get_actions(
        self,
        request: HttpRequest,
        action_location: admin.ActionLocation = admin.ActionLocation.CHANGE_LIST,
    ) -> dict[str, Any]:
        actions = super().get_actions(request, action_location=action_location)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Revoke selected keys", permissions=["revoke"])
    def revoke_keys(self, request: HttpRequest, queryset: ApiKeyQuerySet) -> None:
        count = queryset.revoke()
        self.message_user(request, f"Revoked {count} key(s).", messages.SUCCESS)


@admin.register(AgentJob)
class AgentJobAdmin(OperatorAdmin):
    """Jobs are enqueued through the API and settled by the process that runs them; here an
    operator watches them, cancels open ones and runs failed or cancelled ones again.

    Both actions are requests in the database (``AgentJob.objects``): the holder of a running
    job stops it at its next heartbeat, and a retried job, held by no one, is sent again by the
    job service's sweep. Deleting stays possible (deleting a user deletes their jobs, and the
    admin asks for this permission then); a job still open is deleted from under its holder,
    which then stops writing to it.
    """

    list_display = [
        "id",
        "user",
        "profile",
        "status",
        "attempts",
        "runs",
        "depth",
        "owner",
        "created",
        "started",
        "duration",
        "error_code",
        "error_line",
    ]
    list_filter = ["status", "depth", "error_code", "created"]
    list_select_related = ["user", "profile"]
    search_fields = ["id", "user__username", "profile__slug", "owner", "error"]
    actions = ["cancel_jobs", "retry_jobs"]
    fieldsets = [
        (None, {"fields": ["id", "user", "profile", "status", "attempts", "cancel_requested"]}),
        ("Request", {"fields": ["job", "retries", "allow_partial"]}),
        ("Outcome", {"fields": ["progress", "result", "error_code", "error"]}),
        ("Delegation", {"fields": ["parent", "depth"]}),
        ("Holder", {"fields": ["owner", "heartbeat"]}),
        ("History", {"fields": ["created", "started", "finished", "history"]}),
    ]
    readonly_fields = [
        "id",
        "user",
        "profile",
        "status",
        "attempts",
        "cancel_requested",
        "job",
        "retries",
        "allow_partial",
        "progress",
        "result",
        "error_code",
        "error",
        "parent",
        "depth",
        "owner",
        "heartbeat",
        "created",
        "started",
        "finished",
        "history",
    ]

    @admin.display(description="earlier runs")
    def runs(self, job: AgentJob) -> int:
        return len(job.history or [])

    @admin.display(description="duration")
    def duration(self, job: AgentJob) -> str:
        if job.started is None or job.finished is None:
            return "—"
        return f"{(job.finished - job.started).total_seconds():.1f} s"

    @admin.display(description="error", ordering="error")
    def error_line(self, job: AgentJob) -> str:
        return job.error if len(job.error) <= 120 else job.error[:119] + "…"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AgentJob | None = None) -> bool:
        return False

    def has_operate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents.change_agentjob")

    @admin.action(description="Cancel the selected jobs", permissions=["operate"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[AgentJob]) -> None:
        count = AgentJob.objects.filter(pk__in=queryset.values("pk")).request_cancel()
        self.message_user(
            request,
            f"Cancelling {count} open job(s), with what they delegated; settled ones are left.",
            messages.SUCCESS,
        )

    @admin.action(description="Retry the failed or cancelled jobs", permissions=["operate"])
    def retry_jobs(self, request: HttpRequest, queryset: QuerySet[AgentJob]) -> None:
        count = AgentJob.objects.filter(pk__in=queryset.values("pk")).retry()
        self.message_user(
            request,
            f"Queued {count} job(s) again (their earlier runs are kept); others are left.",
            messages.SUCCESS,
        )


# The MCP servers', schedules' and purges' admin, registered on import.
from . import mcp_admin, schedule_admin, usage_admin  # noqa: E402, F401
