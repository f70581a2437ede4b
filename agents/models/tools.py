"""Tools operators enable: built-ins by name, or HTTP tools they describe."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from ..validators import (
    default_parameters,
    validate_header_env,
    validate_parameters_schema,
    validate_positive,
    validate_tool_name,
    validate_url_template,
)


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
        'e.g. {"Authorization": "ITEMS_TOKEN"}; names end in _API_KEY or _TOKEN, or match '
        "ORKESTREL_KEY_VARIABLES.",
    )
    follow_cross_origin_redirects = models.BooleanField(
        "follow redirects to other origins",
        default=False,
        help_text="For HTTP tools: follow a redirect to another scheme, host or port (sent "
        "without the header variables). Off: only same-origin redirects are followed.",
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
