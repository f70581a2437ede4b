"""Tools operators enable: built-ins by name, or HTTP and command tools they describe."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from ..validators import (
    default_parameters,
    validate_argv,
    validate_argv_placeholders,
    validate_command_timeout,
    validate_header_env,
    validate_json_pointer,
    validate_output_limit,
    validate_parameters_schema,
    validate_positive,
    validate_program,
    validate_tool_name,
    validate_url_template,
)


class Tool(models.Model):
    """A tool agents may call: a built-in implemented in code, an HTTP request or a command."""

    class Kind(models.TextChoices):
        BUILTIN = "builtin", "Built-in"
        HTTP = "http", "HTTP request"
        COMMAND = "command", "Command"

    class Workdir(models.TextChoices):
        SCRATCH = "scratch", "An empty scratch folder"
        WORKSPACE = "workspace", "A copy of the conversation's workspace"

    class Method(models.TextChoices):
        GET = "GET", "GET"
        POST = "POST", "POST"
        PUT = "PUT", "PUT"
        PATCH = "PATCH", "PATCH"
        DELETE = "DELETE", "DELETE"

    # Unset (``None``) is the tool's own safety: a built-in's, which may depend on the call's
    # arguments; an HTTP or command tool's own is a write.
    SAFETY_CHOICES = [
        (None, "The tool's own"),
        (True, "Always safe (read-only)"),
        (False, "Never safe (treated as a write)"),
    ]

    name = models.CharField("name", max_length=64, unique=True, validators=[validate_tool_name])
    kind = models.CharField("kind", max_length=16, choices=Kind.choices, default=Kind.BUILTIN)
    enabled = models.BooleanField("enabled", default=True)
    safe = models.BooleanField(
        "safety",
        null=True,
        blank=True,
        default=None,
        choices=SAFETY_CHOICES,
        help_text="Whether a call is read-only (safe). Only safe calls run in read-only mode; "
        "a turn's contiguous safe calls run together, any other call runs alone, in the "
        "model's order. The tool's own: a built-in's (the workspace tool's list, read and "
        "search are safe, its edits are not; http_fetch is safe), and a write for HTTP and "
        "command tools. A command tool that is not safe runs only under an OS sandbox. Mark a "
        "tool always safe only if it changes nothing.",
    )
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
    system_field = models.CharField(
        "system field",
        max_length=500,
        blank=True,
        validators=[validate_json_pointer],
        help_text="For HTTP tools: a JSON Pointer into the JSON response, e.g. /notice or "
        "/meta/notes. Its value, a string or a list of strings, is added as system messages "
        "after the turn's tool results and left out of the result the model reads. A response "
        "without it (or with null there) adds none; any other value is the call's error.",
    )
    follow_cross_origin_redirects = models.BooleanField(
        "follow redirects to other origins",
        default=False,
        help_text="For HTTP tools: follow a redirect to another scheme, host or port (sent "
        "without the header variables). Off: only same-origin redirects are followed.",
    )
    program = models.CharField(
        "program",
        max_length=500,
        blank=True,
        validators=[validate_program],
        help_text="For command tools: an absolute path (/usr/bin/grep) or a name looked up on "
        "/usr/local/bin:/usr/bin:/bin (grep). It runs directly, never through a shell.",
    )
    argv = models.JSONField(
        "arguments",
        default=list,
        blank=True,
        validators=[validate_argv],
        help_text='For command tools: a JSON list, one string per argument, e.g. ["-n", '
        '"{pattern}", "--", "{path}"]. A {name} is filled with that parameter\'s value, which '
        "stays inside its one argument; an argument whose parameter is absent is left out.",
    )
    workdir = models.CharField(
        "working directory",
        max_length=16,
        choices=Workdir.choices,
        default=Workdir.SCRATCH,
        help_text="For command tools. Files a tool that is not safe creates, changes or deletes "
        "in a copy of the workspace come back into the workspace (text files).",
    )
    output_limit = models.PositiveIntegerField(
        "output limit (bytes)",
        default=65536,
        validators=[validate_output_limit],
        help_text="For command tools: the standard output and error kept, together; the rest is "
        "cut and the result says so.",
    )
    allow_network = models.BooleanField(
        "may use the network",
        default=False,
        help_text="For command tools: off, the sandbox gives the command no network at all "
        "(loopback included).",
    )
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "tool"
        verbose_name_plural = "tools"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["builtin", "http", "command"]),
                name="agents_tool_kind_valid",
            ),
            models.CheckConstraint(
                condition=~Q(kind="http") | ~Q(url_template=""),
                name="agents_tool_http_needs_url",
            ),
            models.CheckConstraint(
                condition=~Q(kind="command") | ~Q(program=""),
                name="agents_tool_command_needs_program",
            ),
            models.CheckConstraint(
                condition=Q(output_limit__gt=0), name="agents_tool_output_limit_positive"
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

    def safety[S](self, own: S) -> S | bool:
        """The safety a run uses: ``own`` (the tool's own) unless marked always or never safe."""
        return own if self.safe is None else self.safe

    def clean(self) -> None:
        super().clean()
        # A cleared JSON box means "none", not null.
        if self.header_env is None:
            self.header_env = {}
        if self.argv is None:
            self.argv = []
        errors: dict[str, list[ValidationError] | str] = {}
        if self.kind != self.Kind.HTTP:
            if self.url_template:
                errors["url_template"] = "Only HTTP tools take a URL template."
            if self.header_env:
                errors["header_env"] = "Only HTTP tools take header variables."
            if self.system_field:
                errors["system_field"] = "Only HTTP tools take a system field."
        if self.kind != self.Kind.COMMAND:
            if self.program:
                errors["program"] = "Only command tools take a program."
            if self.argv:
                errors["argv"] = "Only command tools take arguments."
        if self.kind == self.Kind.HTTP:
            errors.update(self._http_errors())
        elif self.kind == self.Kind.COMMAND:
            errors.update(self._command_errors())
        if errors:
            raise ValidationError(errors)

    def _http_errors(self) -> dict[str, list[ValidationError] | str]:
        if not self.url_template:
            return {"url_template": "HTTP tools need a URL template."}
        try:
            validate_url_template(self.url_template, self.parameter_names())
        except ValidationError as error:
            return {"url_template": error.error_list}
        return {}

    def _command_errors(self) -> dict[str, list[ValidationError] | str]:
        errors: dict[str, list[ValidationError] | str] = {}
        if not self.program:
            errors["program"] = "Command tools need a program."
        if isinstance(self.argv, list) and all(isinstance(item, str) for item in self.argv):
            try:
                validate_argv_placeholders(self.argv, self.parameter_names())
            except ValidationError as error:
                errors["argv"] = error.error_list
            except ValueError:
                pass  # malformed: the field's own validator said so
        try:
            validate_command_timeout(self.timeout)
        except ValidationError as error:
            errors["timeout"] = error.error_list
        return errors
