"""A server's row as a run, a check or the command needs it: read once, no ORM afterwards."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from ..models import McpServer
from .errors import McpCredentialMissing, McpUserCredentialMissing
from .oauth_grant import OAuthGrant

__all__ = ["McpEndpoint", "OfferedTool", "UserCredential", "endpoint_of", "load_profile_servers"]

# Where a user enters their own credential (the chat's settings page); the model reads it.
CREDENTIAL_PAGE = "Settings → MCP servers"


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One tool as the server lists it (the parts a run uses)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    # The server's ``readOnlyHint`` (``None``: it said nothing).
    read_only: bool | None = None

    def as_json(self) -> dict[str, Any]:
        """The row's ``offered`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "read_only": self.read_only,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> OfferedTool | None:
        """An ``offered`` entry read back (``None`` for one that is not well formed)."""
        name, schema = value.get("name"), value.get("input_schema")
        if not isinstance(name, str) or not name or not isinstance(schema, dict):
            return None
        read_only = value.get("read_only")
        return cls(
            name,
            str(value.get("description") or ""),
            schema,
            read_only if isinstance(read_only, bool) else None,
        )


@dataclass(frozen=True, slots=True)
class UserCredential:
    """A user's own token for a per-user server, as a run carries it (never in a ``repr``)."""

    user_id: int
    state: Literal["present", "missing", "unreadable"]
    token: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class McpEndpoint:
    """An MCP server's configuration, with who may use it and which scopes admit it."""

    pk: int | None
    name: str
    url: str
    # A stdio server's program and arguments (then ``url`` is empty), and its network access.
    command: tuple[str, ...] = ()
    network: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    bearer_env: str = ""
    # Each user sends their own token (``credential``, set for the run's user).
    per_user: bool = False
    # The user's token comes from their OAuth connection (``credential`` holds the grant).
    oauth: bool = False
    credential: UserCredential | None = None
    connect_timeout: float = 5.0
    call_timeout: float = 30.0
    allowed_tools: tuple[str, ...] | None = None
    safety: Mapping[str, bool] = field(default_factory=dict)
    users: frozenset[int] = frozenset()
    groups: frozenset[int] = frozenset()
    scopes: frozenset[str] = frozenset()
    # The last listing an operator's check or refresh stored: the tools a run still shows
    # (failing with the server's error) when the server is down at the run's start.
    offered: tuple[OfferedTool, ...] = ()

    @property
    def key(self) -> str:
        """What identifies this server's tool list in the cache: its address and the
        credentials' *names* (a changed URL, header or variable lists afresh); per user for a
        per-user server (what a token may see can differ)."""
        owner = self.credential.user_id if self.per_user and self.credential else None
        material = json.dumps(
            [
                self.pk,
                self.url,
                self.command,
                sorted(self.headers.items()),
                self.bearer_env,
                owner,
            ],
            default=str,
        )
        return f"{self.name}:{hashlib.sha256(material.encode()).hexdigest()[:16]}"

    @property
    def legacy_sse(self) -> bool:
        """Whether the URL names the older HTTP+SSE transport's stream (its path ends in
        ``/sse``) rather than a Streamable HTTP endpoint."""
        return bool(self.url) and urlsplit(self.url).path.rstrip("/").endswith("/sse")

    def bearer_token(self) -> str:
        """The token in the server's variable, read now (``""``: it names none)."""
        if not self.bearer_env:
            return ""
        token = os.environ.get(self.bearer_env, "")
        if not token:
            raise McpCredentialMissing(
                f"MCP server {self.name!r}: its token variable {self.bearer_env} is not set"
            )
        return token

    def request_headers(self) -> dict[str, str]:
        """The headers of every request, the bearer token read from its variable now."""
        headers = dict(self.headers)
        if self.bearer_env:
            headers["Authorization"] = f"Bearer {self.bearer_token()}"
        if self.per_user and not self.oauth:
            headers["Authorization"] = f"Bearer {self._user_token()}"
        return headers

    def oauth_grant(self) -> OAuthGrant:
        """The user's OAuth grant for this server (``McpUserCredentialMissing``: they have not
        connected, or the connection can no longer be read)."""
        grant = OAuthGrant.from_json(self._user_token(connect=True))
        if grant is None:
            raise McpUserCredentialMissing(
                f"MCP server {self.name!r}: connect your account in {CREDENTIAL_PAGE}"
            )
        return grant

    def _user_token(self, connect: bool = False) -> str:
        credential = self.credential
        verb = "connect your account" if connect else "enter it"
        if credential is not None and credential.state == "unreadable":
            raise McpUserCredentialMissing(
                f"MCP server {self.name!r}: your credential can no longer be read (the "
                f"server's key changed): {verb} again in {CREDENTIAL_PAGE}"
            )
        if credential is None or credential.state != "present" or not credential.token:
            if connect:
                raise McpUserCredentialMissing(
                    f"MCP server {self.name!r} needs your account: connect it in {CREDENTIAL_PAGE}"
                )
            raise McpUserCredentialMissing(
                f"MCP server {self.name!r} needs your credential: add it in {CREDENTIAL_PAGE}"
            )
        return credential.token

    def allows(self, tool: str) -> bool:
        """Whether the operator lets agents use the server's ``tool``."""
        return self.allowed_tools is None or tool in self.allowed_tools

    def admits(self, user_id: int, groups_of: Callable[[int], Iterable[int]]) -> bool:
        """Whether ``user_id``'s runs may use the server (everyone when it names nobody);
        ``groups_of`` is read only when the answer depends on the user's groups."""
        if not self.users and not self.groups:
            return True
        if user_id in self.users:
            return True
        return bool(self.groups) and not self.groups.isdisjoint(groups_of(user_id))

    @property
    def needs_groups(self) -> bool:
        """Whether ``admits`` may need the user's groups."""
        return bool(self.groups)


def endpoint_of(row: McpServer, *, related: bool = True) -> McpEndpoint:
    """The endpoint of ``row``; ``related`` reads its access and scopes too (queries unless
    prefetched)."""
    offered = tuple(
        tool
        for tool in (
            OfferedTool.from_json(item)
            for item in (row.offered if isinstance(row.offered, list) else [])
            if isinstance(item, dict)
        )
        if tool is not None
    )
    return McpEndpoint(
        pk=row.pk,
        name=row.name,
        url=row.url,
        command=tuple(str(part) for part in row.command) if isinstance(row.command, list) else (),
        network=row.network,
        headers={str(k): str(v) for k, v in (row.headers or {}).items()},
        bearer_env=row.bearer_env if row.auth == McpServer.Auth.BEARER_ENV else "",
        per_user=row.auth in (McpServer.Auth.USER_TOKEN, McpServer.Auth.OAUTH),
        oauth=row.auth == McpServer.Auth.OAUTH,
        connect_timeout=row.connect_timeout,
        call_timeout=row.call_timeout,
        allowed_tools=tuple(row.allowed_tools) if row.allowed_tools is not None else None,
        safety={str(k): bool(v) for k, v in (row.safety or {}).items()},
        users=frozenset(user.pk for user in row.users.all()) if related else frozenset(),
        groups=frozenset(group.pk for group in row.groups.all()) if related else frozenset(),
        scopes=frozenset(scope.name for scope in row.scopes.all()) if related else frozenset(),
        offered=offered,
    )


def load_profile_servers(profile_id: int) -> tuple[McpEndpoint, ...]:
    """The enabled servers of a profile, by name (three queries, whatever their number)."""
    rows = (
        McpServer.objects.filter(enabled=True, profiles=profile_id)
        .prefetch_related("users", "groups", "scopes")
        .order_by("name")
    )
    return tuple(endpoint_of(row) for row in rows)
