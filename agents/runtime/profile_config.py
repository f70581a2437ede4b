"""A profile's configuration rows, cached per process until any configuration changes.

Every run start needs the profile's endpoint, tools, instructions, authority rules and scope:
five to eight queries that return the same rows until an operator edits something. The cache
is keyed by the profile and the configuration revision (``agents.models.ConfigRevision``),
which every configuration write moves, so an edit in the admin of any process reaches the
next run everywhere. Cached rows are shared between sessions: treat them as read-only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from orkestrel.core import Scope

from ..mcp.endpoint import McpEndpoint, load_profile_servers
from ..models import AgentProfile, AuthorityPolicy, AuthorityRule, ProviderEndpoint, Tool

__all__ = ["ProfileAccess", "ProfileConfig", "load_profile_config", "profile_config"]


@dataclass(frozen=True, slots=True)
class ProfileAccess:
    """Who may use a profile (``AgentProfile.usable_by``'s rule, on cached ids): everyone when
    it names no users and no groups, else the users it names and the members of its groups."""

    users: frozenset[int]
    groups: frozenset[int]

    def admits(self, user_id: int, groups_of: Callable[[int], Iterable[int]]) -> bool:
        """Whether ``user_id`` may use the profile; ``groups_of`` reads the user's group ids,
        only when the answer depends on them (membership is not configuration: never cached)."""
        if not self.users and not self.groups:
            return True
        if user_id in self.users:
            return True
        return bool(self.groups) and not self.groups.isdisjoint(groups_of(user_id))


@dataclass(frozen=True, slots=True)
class ProfileConfig:
    """The rows a profile's runs are built from, besides the profile itself."""

    endpoint: ProviderEndpoint | None
    tools: tuple[Tool, ...]
    policy: AuthorityPolicy | None
    rules: tuple[AuthorityRule, ...]
    scope: Scope | None
    instructions: tuple[Mapping[str, Any], ...]
    # Read with the rest, so a run start checks access without the correlated subqueries
    # that cost more than the rest of its first query (``bench/runs.py``).
    access: ProfileAccess
    # The enabled MCP servers the profile uses (each one's own access is checked per run).
    mcp_servers: tuple[McpEndpoint, ...] = ()


_lock = threading.Lock()
_cache: dict[int, tuple[int | None, ProfileConfig]] = {}


def load_profile_config(profile: AgentProfile) -> ProfileConfig:
    """Read the profile's configuration rows (no cache)."""
    policy = profile.authority_policy
    return ProfileConfig(
        endpoint=profile.endpoint(),
        tools=tuple(profile.tools.filter(enabled=True).order_by("name")),
        policy=policy,
        rules=tuple(policy.rules.order_by("position")) if policy is not None else (),
        scope=profile.scope.to_core() if profile.scope is not None else None,
        instructions=tuple(
            row.to_core_input() for row in profile.instructions.filter(enabled=True)
        ),
        access=ProfileAccess(
            users=frozenset(profile.users.values_list("pk", flat=True)),
            groups=frozenset(profile.groups.values_list("pk", flat=True)),
        ),
        mcp_servers=load_profile_servers(profile.pk),
    )


def profile_config(profile: AgentProfile, revision: int | None) -> ProfileConfig:
    """The profile's configuration as of ``revision``, read once per revision per process.

    ``revision`` must be read in the same query as ``profile`` (or before it), so a change
    committed after the read can only make the cache newer than the profile, never older.
    """
    with _lock:
        cached = _cache.get(profile.pk)
    if cached is not None and revision is not None and cached[0] == revision:
        return cached[1]
    config = load_profile_config(profile)
    with _lock:
        _cache[profile.pk] = (revision, config)
    return config
