"""Agent profiles: the model, bounds and context that one kind of agent runs with."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Exists, OuterRef, Q

from ..validators import (
    validate_positive,
    validate_profile_name,
)
from .authority import AuthorityPolicy
from .context import Instruction, Scope
from .endpoints import ProviderEndpoint
from .tools import Tool


def _retention_days(kind: str, what: str) -> models.PositiveIntegerField[int | None, int | None]:
    """A profile's override of how many days one kind of its records is kept."""
    return models.PositiveIntegerField(
        f"keep {kind} (days)",
        null=True,
        blank=True,
        help_text=f"Days to keep {what}; empty: the setting's; 0: for ever.",
    )


class AgentProfileQuerySet(models.QuerySet["AgentProfile"]):
    def usable_by(self, user_id: int | None) -> AgentProfileQuerySet:
        """The profiles ``user_id`` may use: open ones (no users, no groups) and those naming
        the user or one of the user's groups."""
        users = AgentProfile.users.through.objects.filter(agentprofile_id=OuterRef("pk"))
        groups = AgentProfile.groups.through.objects.filter(agentprofile_id=OuterRef("pk"))
        usable = ~Exists(users) & ~Exists(groups)
        if user_id is not None:
            usable |= Exists(users.filter(user_id=user_id)) | Exists(
                groups.filter(group__user=user_id)
            )
        return self.filter(usable)


class AgentProfile(models.Model):
    """A configured agent: prompt, ``<endpoint>/<model>``, bounds, tools, scope and authority."""

    objects = AgentProfileQuerySet.as_manager()

    class Thinking(models.TextChoices):
        DEFAULT = "", "Provider default"
        NONE = "none", "None"
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"
        XHIGH = "xhigh", "Extra high"
        MAX = "max", "Maximum"

    slug = models.SlugField("slug", max_length=64, unique=True, validators=[validate_profile_name])
    name = models.CharField("name", max_length=100, validators=[validate_profile_name])
    description = models.TextField("description", blank=True)
    system_prompt = models.TextField("system prompt", blank=True)
    model = models.CharField(
        "model",
        max_length=300,
        help_text="<endpoint-name>/<model>, e.g. local/llama3.2 or router/meta-llama/llama-3.",
    )
    limit = models.PositiveSmallIntegerField(
        "step limit",
        default=10,
        validators=[MaxValueValidator(100)],
        help_text="Most model turns per run (0 to 100).",
    )
    timeout = models.FloatField("timeout (s)", default=300.0, validators=[validate_positive])
    token_budget = models.PositiveIntegerField(
        "token budget", null=True, blank=True, help_text="Most tokens per run; empty = no limit."
    )
    context_window = models.PositiveIntegerField(
        "context window",
        null=True,
        blank=True,
        help_text="Tokens before automatic compaction; empty = never compact.",
    )
    keep = models.PositiveIntegerField(
        "keep", default=4, help_text="Recent messages kept verbatim when compacting."
    )
    sections_cap = models.PositiveIntegerField(
        "sections cap",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Most compaction sections kept; empty = no cap.",
    )
    thinking = models.CharField(
        "thinking", max_length=8, choices=Thinking.choices, default=Thinking.DEFAULT, blank=True
    )
    tools = models.ManyToManyField(Tool, blank=True, related_name="profiles", verbose_name="tools")
    scope = models.ForeignKey(
        Scope,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="profiles",
        verbose_name="scope",
    )
    authority_policy = models.ForeignKey(
        AuthorityPolicy,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="profiles",
        verbose_name="authority policy",
    )
    instructions = models.ManyToManyField(
        Instruction, blank=True, related_name="profiles", verbose_name="instructions"
    )
    read_only = models.BooleanField(
        "read-only",
        default=False,
        help_text="Only read-only (safe) tools run in its conversations; writes are refused.",
    )

    class OnApprovalTimeout(models.TextChoices):
        DENY = "deny", "deny the call"
        WAIT = "wait", "keep waiting"

    approval_timeout = models.PositiveIntegerField(
        "approval timeout (s)",
        null=True,
        blank=True,
        help_text="How long a call that asks a person waits for a decision; empty: no limit.",
    )
    approval_timeout_action = models.CharField(
        "when nobody decides",
        max_length=8,
        choices=OnApprovalTimeout.choices,
        default=OnApprovalTimeout.DENY,
    )
    # Who may use it: everyone when both are empty.
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="agent_profiles",
        verbose_name="users",
        help_text="Users who may use it, besides the groups' members; none of either: everyone.",
    )
    groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="agent_profiles",
        verbose_name="groups",
        help_text="Groups whose members may use this profile.",
    )
    may_delegate_to = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="delegated_from",
        verbose_name="may delegate to",
        help_text="Profiles this one's delegate tool may hand a task to; none: it may not.",
    )
    # How long its records are kept (``agents.models.retention``): empty follows the setting
    # (``ORKESTREL["RETENTION_DAYS"]``), 0 keeps them for ever.
    retain_conversations_days = _retention_days("conversations", "since their last activity")
    retain_runs_days = _retention_days("runs", "settled runs, since they finished")
    retain_run_events_days = _retention_days(
        "run events", "the frames a settled run stored for replay"
    )
    retain_approvals_days = _retention_days("approvals", "decided or expired tool approvals")
    retain_decisions_days = _retention_days("authority decisions", "the tool calls' verdicts")
    retain_tool_failures_days = _retention_days("tool failures", "failed tool calls' log")
    retain_jobs_days = _retention_days("jobs", "settled agent jobs, since they finished")
    enabled = models.BooleanField("enabled", default=True)
    is_default = models.BooleanField("default profile", default=False)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "agent profile"
        verbose_name_plural = "agent profiles"
        ordering = ["name", "slug"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"],
                condition=Q(is_default=True),
                name="agents_profile_single_default",
                violation_error_message="Another profile is already the default.",
            ),
            models.CheckConstraint(condition=Q(limit__lte=100), name="agents_profile_limit_range"),
            models.CheckConstraint(condition=Q(timeout__gt=0), name="agents_profile_timeout_pos"),
            models.CheckConstraint(
                condition=Q(sections_cap__isnull=True) | Q(sections_cap__gte=1),
                name="agents_profile_sections_cap_min",
            ),
            models.CheckConstraint(
                condition=Q(thinking__in=["", "none", "low", "medium", "high", "xhigh", "max"]),
                name="agents_profile_thinking_valid",
            ),
        ]
        indexes = [models.Index(fields=["enabled", "slug"], name="agents_profile_enabled_idx")]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    @property
    def endpoint_name(self) -> str:
        """The part of ``model`` before the first ``/``."""
        return self.model.partition("/")[0]

    @property
    def model_name(self) -> str:
        """The part of ``model`` after the first ``/`` (may itself contain ``/``)."""
        return self.model.partition("/")[2]

    def endpoint(self) -> ProviderEndpoint | None:
        """The endpoint ``model`` names, or ``None`` when it does not exist."""
        if not self.endpoint_name:
            return None
        return ProviderEndpoint.objects.filter(name=self.endpoint_name).first()

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        model_error = self._model_error()
        if model_error:
            errors["model"] = model_error
        if self.is_default:
            others = AgentProfile.objects.filter(is_default=True).exclude(pk=self.pk)
            if others.exists():
                errors["is_default"] = (
                    f"{others.first()} is already the default profile; unset it first."
                )
        if errors:
            raise ValidationError(errors)

    def _model_error(self) -> str | None:
        endpoint_name, slash, model_name = (self.model or "").partition("/")
        if not slash or not endpoint_name or not model_name:
            return "Write the model as <endpoint-name>/<model>, e.g. local/llama3.2."
        endpoint = ProviderEndpoint.objects.filter(name=endpoint_name).first()
        if endpoint is None:
            return f"No provider endpoint is named {endpoint_name!r}."
        if endpoint.models and model_name not in endpoint.models:
            return f"Endpoint {endpoint_name!r} does not list model {model_name!r}."
        return None
