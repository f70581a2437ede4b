"""Models of the agents app: what operators configure for agents to run.

Provider endpoints (where models live), tools, authority policies with their ordered rules,
scopes, instructions, and the agent profiles that tie them together. Every model validates in
``clean()`` with field errors; database constraints back the rules that must never break.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from orkestrel.core import Scope as CoreScope
from orkestrel.core import create_scope

from .conditions import compile_matcher, validate_conditions
from .validators import (
    default_parameters,
    validate_env_name,
    validate_glob,
    validate_header_env,
    validate_name_list,
    validate_parameters_schema,
    validate_positive,
    validate_tool_name,
    validate_url_template,
)

__all__ = [
    "AgentProfile",
    "AuthorityPolicy",
    "AuthorityRule",
    "Instruction",
    "ProviderEndpoint",
    "Scope",
    "Tool",
]


class ProviderEndpoint(models.Model):
    """Where a model is served, and how to reach it (the key stays in the environment)."""

    class Kind(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible"
        ANTHROPIC = "anthropic", "Anthropic"
        OLLAMA = "ollama", "Ollama"
        SCRIPTED = "scripted", "Scripted (tests and demos)"

    name = models.SlugField("name", max_length=64, unique=True)
    kind = models.CharField("kind", max_length=16, choices=Kind.choices)
    base_url = models.URLField(
        "base URL", max_length=500, blank=True, help_text="Blank only for scripted endpoints."
    )
    api_key_env = models.CharField(
        "API key variable",
        max_length=128,
        blank=True,
        validators=[validate_env_name],
        help_text="The NAME of the environment variable holding the key (never the key).",
    )
    connect_timeout = models.FloatField(
        "connect timeout (s)", default=10.0, validators=[validate_positive]
    )
    read_timeout = models.FloatField(
        "read timeout (s)", default=300.0, validators=[validate_positive]
    )
    max_retries = models.PositiveSmallIntegerField(
        "max retries", default=2, validators=[MaxValueValidator(10)]
    )
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)
    # Defined last: inside this class body the name ``models`` then means this field.
    models = models.JSONField(
        "models",
        default=list,
        blank=True,
        validators=[validate_name_list],
        help_text="Model names served here, as a JSON list; empty allows any.",
    )

    class Meta:
        verbose_name = "provider endpoint"
        verbose_name_plural = "provider endpoints"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["openai", "anthropic", "ollama", "scripted"]),
                name="agents_endpoint_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind="scripted") | ~Q(base_url=""),
                name="agents_endpoint_base_url_required",
            ),
            models.CheckConstraint(
                condition=Q(connect_timeout__gt=0) & Q(read_timeout__gt=0),
                name="agents_endpoint_timeouts_positive",
            ),
            models.CheckConstraint(
                condition=Q(max_retries__lte=10), name="agents_endpoint_max_retries_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        if self.kind != self.Kind.SCRIPTED and not self.base_url:
            errors["base_url"] = "Enter the endpoint's base URL."
        elif "@" in urlsplit(self.base_url or "").netloc:
            # A URL is shown in lists and logs: credentials belong in the key variable.
            errors["base_url"] = "Put credentials in the key variable, not in the URL."
        if self.models is None:
            self.models = []
        errors.update(self._profile_errors())
        if errors:
            raise ValidationError(errors)

    def _profile_errors(self) -> dict[str, str]:
        """Profiles name this endpoint in their ``model``: keep them pointing somewhere real."""
        if self.pk is None:
            return {}
        stored = ProviderEndpoint.objects.filter(pk=self.pk).values_list("name", flat=True).first()
        if stored is None:
            return {}
        users = list(AgentProfile.objects.filter(model__startswith=f"{stored}/"))
        if not users:
            return {}
        errors = {}
        if stored != self.name:
            slugs = ", ".join(profile.slug for profile in users)
            errors["name"] = f"Profiles use this endpoint by name ({slugs}); change them first."
        listed = self.models if isinstance(self.models, list) else []
        if listed and all(isinstance(name, str) for name in listed):
            missing = sorted({profile.model_name for profile in users} - set(listed))
            if missing:
                errors["models"] = f"Profiles use models missing from the list: {missing}."
        return errors

    def api_key(self) -> str | None:
        """The key from the environment variable named by ``api_key_env`` (``None`` if unset)."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    @property
    def api_key_set(self) -> bool:
        """Whether the key's environment variable is set (safe to show; the key is not)."""
        return self.api_key() is not None


class Tool(models.Model):
    """A tool agents may call: a built-in implemented in code, or an HTTP request."""

    class Kind(models.TextChoices):
        BUILTIN = "builtin", "Built-in"
        HTTP = "http", "HTTP request"

    class Method(models.TextChoices):
        GET = "GET", "GET"
        POST = "POST", "POST"
        PUT = "PUT", "PUT"
        PATCH = "PATCH", "PATCH"
        DELETE = "DELETE", "DELETE"

    name = models.CharField("name", max_length=64, unique=True, validators=[validate_tool_name])
    kind = models.CharField("kind", max_length=16, choices=Kind.choices, default=Kind.BUILTIN)
    enabled = models.BooleanField("enabled", default=True)
    safe = models.BooleanField("safe", default=False, help_text="Read-only: changes nothing.")
    timeout = models.FloatField("timeout (s)", default=30.0, validators=[validate_positive])
    summary = models.CharField("summary", max_length=200, blank=True)
    description = models.TextField("description", blank=True)
    parameters = models.JSONField(
        "parameters",
        default=default_parameters,
        validators=[validate_parameters_schema],
        help_text='A JSON Schema with "type": "object" describing the arguments.',
    )
    http_method = models.CharField(
        "HTTP method", max_length=8, choices=Method.choices, default=Method.GET
    )
    url_template = models.CharField(
        "URL template",
        max_length=2000,
        blank=True,
        help_text="For HTTP tools, e.g. https://api.example.com/items/{id}; "
        "placeholders are parameter names.",
    )
    header_env = models.JSONField(
        "header variables",
        default=dict,
        blank=True,
        validators=[validate_header_env],
        help_text="Header name to the environment variable holding its whole value, "
        'e.g. {"Authorization": "ITEMS_AUTHORIZATION"}.',
    )
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "tool"
        verbose_name_plural = "tools"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["builtin", "http"]), name="agents_tool_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind="builtin") | ~Q(url_template=""),
                name="agents_tool_http_needs_url",
            ),
            models.CheckConstraint(condition=Q(timeout__gt=0), name="agents_tool_timeout_positive"),
        ]
        indexes = [models.Index(fields=["enabled", "name"], name="agents_tool_enabled_idx")]

    def __str__(self) -> str:
        return self.name

    def parameter_names(self) -> list[str]:
        """The argument names the parameters schema declares."""
        schema = self.parameters if isinstance(self.parameters, dict) else {}
        properties = schema.get("properties")
        return list(properties) if isinstance(properties, dict) else []

    def clean(self) -> None:
        super().clean()
        if self.kind != self.Kind.HTTP:
            errors = {}
            if self.url_template:
                errors["url_template"] = "Only HTTP tools take a URL template."
            if self.header_env:
                errors["header_env"] = "Only HTTP tools take header variables."
            if errors:
                raise ValidationError(errors)
            return
        if not self.url_template:
            raise ValidationError({"url_template": "HTTP tools need a URL template."})
        try:
            validate_url_template(self.url_template, self.parameter_names())
        except ValidationError as error:
            raise ValidationError({"url_template": error.error_list}) from error


class AuthorityPolicy(models.Model):
    """An ordered rule list consulted before each tool call, and what to do when none matches."""

    name = models.CharField("name", max_length=100, unique=True)
    fallback_allowed = models.BooleanField(
        "fallback allows",
        default=True,
        help_text="When no rule matches: allow (a denylist) or deny (an allowlist).",
    )
    fallback_zone = models.CharField("fallback zone", max_length=64, default="default")
    fallback_reason = models.CharField("fallback reason", max_length=255, blank=True)

    class Meta:
        verbose_name = "authority policy"
        verbose_name_plural = "authority policies"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(fallback_zone=""), name="agents_policy_fallback_zone_set"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class AuthorityRule(models.Model):
    """One rule of a policy: first match (by ``position``) decides the call."""

    policy = models.ForeignKey(
        AuthorityPolicy, on_delete=models.CASCADE, related_name="rules", verbose_name="policy"
    )
    position = models.PositiveIntegerField("position", help_text="Lower positions match first.")
    tool_glob = models.CharField(
        "tool pattern",
        max_length=200,
        validators=[validate_glob],
        help_text="A glob on the tool name, e.g. delete_* or *.",
    )
    conditions = models.JSONField(
        "conditions",
        default=dict,
        blank=True,
        validators=[validate_conditions],
        help_text='Argument tests, e.g. {"path": {"pattern": "^/etc/"}}; '
        "kinds: equals, in, pattern, exists.",
    )
    zone = models.CharField("zone", max_length=64, default="default")
    allowed = models.BooleanField("allows", default=False)
    reason = models.CharField("reason", max_length=255, blank=True)

    class Meta:
        verbose_name = "authority rule"
        verbose_name_plural = "authority rules"
        ordering = ["policy", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["policy", "position"], name="agents_rule_policy_position_unique"
            ),
            models.CheckConstraint(condition=~Q(tool_glob=""), name="agents_rule_glob_set"),
            models.CheckConstraint(condition=~Q(zone=""), name="agents_rule_zone_set"),
        ]

    def __str__(self) -> str:
        verdict = "allow" if self.allowed else "deny"
        return f"#{self.position} {verdict} {self.tool_glob}"

    def matches(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether this rule applies to a call of tool ``name`` with ``arguments``."""
        return compile_matcher(self.tool_glob, self.conditions or {})(name, arguments)


def _allow_list(label: str, what: str) -> models.JSONField:
    """A three-way allow-list column: ``null`` = all, ``[]`` = none, a list = only those."""
    return models.JSONField(
        label,
        null=True,
        blank=True,
        default=None,
        validators=[validate_name_list],
        help_text=f"{what}: null = all, [] = none, a list = only those.",
    )


class Scope(models.Model):
    """A named allow-list over instructions, tools and files (``null`` = no constraint)."""

    name = models.CharField("name", max_length=100, unique=True)
    instructions = _allow_list("instructions", "Instruction names")
    tools = _allow_list("tools", "Tool names")
    files = _allow_list("files", "Workspace file paths")

    class Meta:
        verbose_name = "scope"
        verbose_name_plural = "scopes"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_core(self) -> CoreScope:
        """The kit's immutable ``Scope`` for this row."""
        return create_scope(
            name=self.name, instructions=self.instructions, tools=self.tools, files=self.files
        )


class Instruction(models.Model):
    """A named directive added to agents' prompts (higher priority first)."""

    name = models.CharField("name", max_length=100, unique=True)
    content = models.TextField("content")
    priority = models.IntegerField("priority", default=0, help_text="Higher sorts first.")
    format = models.TextField(
        "format override", blank=True, help_text="A fully rendered replacement for this item."
    )
    enabled = models.BooleanField("enabled", default=True)

    class Meta:
        verbose_name = "instruction"
        verbose_name_plural = "instructions"
        ordering = ["-priority", "name"]

    def __str__(self) -> str:
        return self.name

    def to_core_input(self) -> dict[str, Any]:
        """The ``InstructionManager.add`` input for this row."""
        return {
            "name": self.name,
            "content": self.content,
            "priority": self.priority,
            "format": self.format or None,
        }


class AgentProfile(models.Model):
    """A configured agent: prompt, ``<endpoint>/<model>``, bounds, tools, scope and authority."""

    class Thinking(models.TextChoices):
        DEFAULT = "", "Provider default"
        NONE = "none", "None"
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"
        XHIGH = "xhigh", "Extra high"
        MAX = "max", "Maximum"

    slug = models.SlugField("slug", max_length=64, unique=True)
    name = models.CharField("name", max_length=100)
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
