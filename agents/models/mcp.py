"""MCP servers operators plug in: each one's tools join the runs of the profiles that use it."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models
from django.db.models import Q

from ..mcp.sealing import seal, unseal
from ..validators import (
    HEADER_NAME_PATTERN,
    looks_like_secret,
    validate_key_variable,
    validate_name_list,
    validate_positive,
    validate_program,
)
from .context import Scope
from .profiles import AgentProfile

__all__ = ["McpCredential", "McpServer", "validate_credential_token", "validate_server_name"]

SERVER_NAME_PATTERN = re.compile(r"^[a-z0-9_-]{1,48}$")
# A user's token is sent as ``Authorization: Bearer <token>``: visible ASCII, no spaces.
TOKEN_PATTERN = re.compile(r"^[\x21-\x7e]+$")
MAX_TOKEN_LENGTH = 8192
# A stdio server's command line: the program, then at most this many arguments.
MAX_COMMAND_ARGUMENTS = 64
# Headers a server's row may not set: the transport's own, and credentials (a bearer token
# comes from an environment variable, never from a row the admin shows).
RESERVED_HEADERS = frozenset(
    {"authorization", "content-type", "accept", "content-length", "host", "mcp-session-id"}
)


def validate_server_name(value: str) -> None:
    """A server's name: 1 to 48 of ``a-z``, ``0-9``, ``_`` and ``-`` (a tool-name prefix)."""
    if not SERVER_NAME_PATTERN.match(value or ""):
        raise ValidationError(
            "Use 1 to 48 lower-case letters, digits, underscores or hyphens.", code="invalid"
        )


def validate_credential_token(value: str) -> None:
    """A user's token for a server: one word of visible ASCII, at most 8192 characters."""
    if not value or len(value) > MAX_TOKEN_LENGTH or not TOKEN_PATTERN.match(value):
        raise ValidationError(
            "Paste the token as the server issued it: visible characters, no spaces, "
            "at most %(limit)d.",
            code="invalid",
            params={"limit": MAX_TOKEN_LENGTH},
        )


def validate_mcp_url(value: str) -> None:
    """An ``http`` or ``https`` URL (the Streamable HTTP endpoint, e.g. ``…/mcp``)."""
    URLValidator(schemes=["http", "https"])(value)


def validate_stdio_command(value: Any) -> None:
    """A stdio server's command: a JSON list of strings, a program this server can run (as
    command tools' programs) first."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(item, str) and "\x00" not in item for item in value)
    ):
        raise ValidationError(
            'Enter a JSON list: the program, then its arguments, e.g. ["mcp-server-git", '
            '"--repository", "/srv/repo"].',
            code="invalid",
        )
    if len(value) > MAX_COMMAND_ARGUMENTS + 1:
        raise ValidationError(
            "At most %(limit)d arguments.", code="too_many", params={"limit": MAX_COMMAND_ARGUMENTS}
        )
    validate_program(value[0])


def validate_static_headers(value: Any) -> None:
    """A JSON object of header name to value; no credentials, no transport headers."""
    if not isinstance(value, dict):
        raise ValidationError('Enter a JSON object such as {"X-Tenant": "acme"}.', code="invalid")
    for name, text in value.items():
        if not HEADER_NAME_PATTERN.match(name):
            raise ValidationError(
                "%(name)r is not a valid header name.", code="header", params={"name": name}
            )
        if name.lower() in RESERVED_HEADERS:
            raise ValidationError(
                "%(name)r is set by orkestrel (a token: use the bearer token variable).",
                code="reserved",
                params={"name": name},
            )
        if not isinstance(text, str) or "\n" in text or "\r" in text:
            raise ValidationError(
                "The value of %(name)r must be one line of text.",
                code="value",
                params={"name": name},
            )
        if looks_like_secret(text):
            raise ValidationError(
                "The value of %(name)r looks like a secret: headers are shown in the admin. "
                "Send a token as the bearer token, from an environment variable.",
                code="secret",
                params={"name": name},
            )


def validate_safety_overrides(value: Any) -> None:
    """A JSON object of the server's tool name to ``true`` (safe) or ``false`` (a write)."""
    if not isinstance(value, dict) or not all(
        isinstance(name, str) and name and isinstance(safe, bool) for name, safe in value.items()
    ):
        raise ValidationError(
            'Enter a JSON object of tool names to true or false, e.g. {"search": true}.',
            code="invalid",
        )


def _empty_dict() -> dict[str, Any]:
    return {}


class McpServer(models.Model):
    """A Model Context Protocol server, reached over Streamable HTTP or started as a sandboxed
    stdio process, and who may use it."""

    class Auth(models.TextChoices):
        NONE = "none", "None"
        BEARER_ENV = "bearer_env", "Bearer token from an environment variable"
        USER_TOKEN = "user_token", "Per-user credential (each user enters their own token)"
        OAUTH = "oauth", "OAuth 2.1 per user (each user connects their own account)"

    name = models.CharField(
        "name",
        max_length=48,
        unique=True,
        validators=[validate_server_name],
        help_text="Its tools reach the model as <name>__<tool> (cut to 64 characters); "
        "authority rules may name them so, e.g. github__*.",
    )
    url = models.CharField(
        "URL",
        max_length=500,
        blank=True,
        validators=[validate_mcp_url],
        help_text="The server's Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp "
        "(or leave it empty and give a stdio command).",
    )
    command = models.JSONField(
        "stdio command",
        null=True,
        blank=True,
        default=None,
        validators=[validate_stdio_command],
        help_text='Instead of a URL: the program and its arguments, e.g. ["mcp-server-git", '
        '"--repository", "/srv/repo"]. It runs under the command tools\' sandbox (bubblewrap), '
        "refused where there is none, with no inherited environment: only PATH, HOME (its "
        "own empty folder), LANG and the bearer token variable, under its own name.",
    )
    network = models.BooleanField(
        "network access",
        default=False,
        help_text="Whether a stdio server may reach the network (a URL server always does).",
    )
    headers = models.JSONField(
        "headers",
        default=_empty_dict,
        blank=True,
        validators=[validate_static_headers],
        help_text='Sent with every request, e.g. {"X-Tenant": "acme"}. No secrets here.',
    )
    auth = models.CharField(
        "authentication",
        max_length=16,
        choices=Auth.choices,
        default=Auth.NONE,
        help_text="A per-user credential is a token each user enters in Settings → MCP "
        "servers, sent as Authorization: Bearer <token>, stored encrypted; a user without "
        "one sees the tools, and their calls ask them to add it.",
    )
    bearer_env = models.CharField(
        "bearer token variable",
        max_length=100,
        blank=True,
        validators=[validate_key_variable],
        help_text="The environment variable holding the token (e.g. GITHUB_MCP_TOKEN), "
        "sent as Authorization: Bearer <token>; never the token itself.",
    )
    connect_timeout = models.FloatField(
        "connect timeout (s)", default=5.0, validators=[validate_positive]
    )
    call_timeout = models.FloatField(
        "call timeout (s)",
        default=30.0,
        validators=[validate_positive],
        help_text="Longest a tool call (or a listing) may take before the model reads an error.",
    )
    allowed_tools = models.JSONField(
        "allowed tools",
        null=True,
        blank=True,
        default=None,
        validators=[validate_name_list],
        help_text='The server\'s tool names agents may use, e.g. ["search", "get_issue"]; '
        "null: every tool it offers.",
    )
    safety = models.JSONField(
        "safety overrides",
        default=_empty_dict,
        blank=True,
        validators=[validate_safety_overrides],
        help_text="Per tool: true (read-only, runs in read-only mode) or false (a write). "
        "Otherwise a tool is safe exactly when the server marks it readOnlyHint.",
    )
    enabled = models.BooleanField("enabled", default=True)
    profiles = models.ManyToManyField(
        AgentProfile,
        blank=True,
        related_name="mcp_servers",
        verbose_name="profiles",
        help_text="The agent profiles whose runs get this server's tools.",
    )
    scopes = models.ManyToManyField(
        Scope,
        blank=True,
        related_name="mcp_servers",
        verbose_name="scopes",
        help_text="Scopes with a tool allow-list that let this server's tools through "
        "(a scope without one lets every tool through).",
    )
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="mcp_servers",
        verbose_name="users",
        help_text="Users whose runs may use it, besides the groups' members; none of either: "
        "everyone.",
    )
    groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="mcp_servers",
        verbose_name="groups",
        help_text="Groups whose members' runs may use it.",
    )
    offered = models.JSONField(
        "offered tools",
        default=list,
        blank=True,
        editable=False,
        help_text="What the server offered when last checked or refreshed.",
    )
    refreshed = models.DateTimeField("tools refreshed", null=True, blank=True, editable=False)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "MCP server"
        verbose_name_plural = "MCP servers"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(auth="bearer_env") | ~Q(bearer_env=""),
                name="agents_mcp_bearer_names_variable",
                violation_error_message="A bearer token needs the variable that holds it.",
            ),
            models.CheckConstraint(
                condition=Q(connect_timeout__gt=0) & Q(call_timeout__gt=0),
                name="agents_mcp_timeouts_positive",
            ),
            models.CheckConstraint(
                condition=(~Q(url="") & Q(command__isnull=True))
                | (Q(url="") & Q(command__isnull=False)),
                name="agents_mcp_url_or_command",
                violation_error_message="Give the server a URL or a stdio command, not both.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if self.auth == self.Auth.BEARER_ENV and not self.bearer_env:
            raise ValidationError({"bearer_env": "Name the variable that holds the token."})
        if self.auth != self.Auth.BEARER_ENV and self.bearer_env:
            raise ValidationError({"auth": "Choose the bearer token, or clear the token variable."})
        if self.command == []:
            self.command = None  # an emptied field: no command
        if self.command is not None and self.url:
            raise ValidationError({"command": "Give a URL or a stdio command, not both."})
        if self.command is None and not self.url:
            raise ValidationError({"url": "Give the server's URL, or a stdio command."})
        if self.command is not None and self.auth in (self.Auth.USER_TOKEN, self.Auth.OAUTH):
            raise ValidationError(
                {
                    "auth": "A stdio server is one process for everyone: it cannot take each "
                    "user's own token. Use a URL server, or a token variable."
                }
            )
        if self.command is not None and self.headers:
            raise ValidationError({"headers": "Headers are sent to a URL server only."})


class McpCredentialQuerySet(models.QuerySet["McpCredential"]):
    def store(self, *, user_id: int, server_id: int, token: str) -> McpCredential:
        """Enter or replace ``user_id``'s token for the server, sealed."""
        validate_credential_token(token)
        credential, _ = self.update_or_create(
            user_id=user_id, server_id=server_id, defaults={"sealed": seal(token)}
        )
        return credential


class McpCredential(models.Model):
    """One user's own token for an MCP server whose authentication is per user.

    Only the sealed form is stored (``agents.mcp.sealing``: the key lives outside the
    database); nothing shows it back: pages and the API say only whether one is set.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="mcp_credentials",
        verbose_name="user",
    )
    server = models.ForeignKey(
        McpServer, on_delete=models.CASCADE, related_name="credentials", verbose_name="server"
    )
    sealed = models.TextField("sealed token", editable=False)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    objects = McpCredentialQuerySet.as_manager()

    class Meta:
        verbose_name = "MCP credential"
        verbose_name_plural = "MCP credentials"
        ordering = ["server__name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "server"], name="agents_mcp_one_credential")
        ]

    def __str__(self) -> str:
        return f"credential of user {self.user_id} for MCP server {self.server_id}"

    @property
    def token(self) -> str | None:
        """The token, unsealed (``None``: no current key opens it)."""
        return unseal(self.sealed)
