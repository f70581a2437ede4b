"""The rows behind a chat session: profile, configuration and stored snapshots, read at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from conversations.models import Conversation
from conversations.owned import owned_conversation
from conversations.stores import DjangoConversationStore
from orkestrel.core import Scope, TokenUsage
from orkestrel.refusals import Refusal
from orkestrel.statements import Query
from workspaces.models import Workspace
from workspaces.stores import DjangoWorkspaceStore

from ..mcp.endpoint import McpEndpoint
from ..models import (
    AgentProfile,
    AuthorityPolicy,
    AuthorityRule,
    ProviderEndpoint,
    Tool,
    config_revision_sql,
)
from .profile_config import profile_config
from .skills import skill_instructions

__all__ = [
    "LoadedSession",
    "ModelUnavailable",
    "NoProfileError",
    "RuntimeSpec",
    "group_ids",
    "load_session",
    "enabled_profile",
    "load_spec",
    "profile_usable",
]


class NoProfileError(LookupError, Refusal):
    """No enabled agent profile can serve the conversation."""

    code = "no_profile"
    field = "profile"


class ModelUnavailable(LookupError, Refusal):
    """The conversation (or its profile) runs on a model whose endpoint is gone or disabled:
    refused, never replaced."""

    code = "model_unavailable"
    status_code = 409

    def __init__(self, model: str, *, chosen: bool = True) -> None:
        whose = "this conversation chose" if chosen else "of its agent profile"
        super().__init__(
            f"the model {model!r} {whose} is no longer available; choose another model"
        )
        self.model = model


@dataclass(frozen=True, slots=True)
class RuntimeSpec:
    """Everything a session needs from the database, loaded in one synchronous step."""

    conversation_id: str
    user_id: int
    workspace_id: str
    profile: AgentProfile
    endpoint: ProviderEndpoint
    tools: tuple[Tool, ...]
    policy: AuthorityPolicy | None
    rules: tuple[AuthorityRule, ...]
    scope: Scope | None
    instructions: tuple[Mapping[str, Any], ...]
    # The model the run calls on ``endpoint`` and its thinking level: the conversation's own
    # choice when it made one, else the profile's.
    model_name: str = ""
    thinking: str = ""
    # Only read-only tools run (the conversation's toggle).
    read_only: bool = False
    # The conversation's title and cumulative usage as loaded (for the run's first frames).
    title: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: Decimal | None = None
    # The profile's enabled MCP servers (whether this user may use each is checked at build).
    mcp_servers: tuple[McpEndpoint, ...] = ()


def group_ids(user_id: int) -> list[int]:
    """The ids of the groups ``user_id`` belongs to."""
    memberships = get_user_model().groups.through.objects.filter(user_id=user_id)
    return list(memberships.values_list("group_id", flat=True))


def profile_usable(profile: AgentProfile, user_id: int, revision: int | None) -> bool:
    """Whether ``user_id`` may run ``profile`` (enabled, and open to them), from the cached
    configuration as of ``revision`` (read with ``profile``, as ``profile_config`` asks)."""
    return profile.enabled and profile_config(profile, revision).access.admits(user_id, group_ids)


def _profile_for(conversation: Conversation, user_id: int, revision: int | None) -> AgentProfile:
    """The conversation's profile while enabled and the user may use it, else their default."""
    profile = conversation.profile
    if profile is not None and profile_usable(profile, user_id, revision):
        return profile
    usable = AgentProfile.objects.filter(enabled=True).usable_by(user_id)
    fallback = usable.order_by("-is_default", "name").first()
    if fallback is None:
        raise NoProfileError("no agent profile you may use is enabled; an operator must set one")
    return fallback


def _chosen_endpoint(model: str) -> ProviderEndpoint | None:
    """The enabled endpoint serving ``model`` (``None``: deleted or disabled)."""
    return ProviderEndpoint.objects.filter(name=model.partition("/")[0], enabled=True).first()


_PROFILE_FIELDS = tuple(AgentProfile._meta.concrete_fields)


def _conversation(conversation_id: str, user_id: int) -> tuple[Conversation, int | None]:
    """The user's conversation with its profile, and the configuration revision
    (``Conversation.DoesNotExist``)."""
    found = owned_conversation(conversation_id, user_id)
    if found is None:
        raise Conversation.DoesNotExist(f"no conversation {conversation_id!r} of this user")
    return found


_ENABLED_PROFILE = Query(
    lambda n: (
        f"SELECT {', '.join(n.field(f) for f in _PROFILE_FIELDS)}, "
        f"{config_revision_sql(n)} FROM {n.table(AgentProfile)} "
        f"WHERE {n.column(AgentProfile, 'slug')} = %s AND {n.column(AgentProfile, 'enabled')} = %s"
    ),
    [*_PROFILE_FIELDS, None],
)


def enabled_profile(slug: str) -> tuple[AgentProfile, int | None] | None:
    """The enabled profile ``slug`` names, with the configuration revision read beside it."""
    found = _ENABLED_PROFILE.rows([slug, True])
    if not found:
        return None
    row = found[0]
    attnames = [f.attname for f in _PROFILE_FIELDS]
    return AgentProfile.from_db(connection.alias, attnames, row[:-1]), row[-1]


def load_spec(conversation_id: str, user_id: int) -> RuntimeSpec:
    """Load the rows behind one conversation of ``user_id`` (``Conversation.DoesNotExist``)."""
    conversation, revision = _conversation(conversation_id, user_id)
    profile = _profile_for(conversation, user_id, revision)
    config = profile_config(profile, revision)
    endpoint, model_name = config.endpoint, profile.model_name
    if conversation.model:
        chosen = _chosen_endpoint(conversation.model)
        if chosen is None:
            # Another model answering in its place would be a silent substitution.
            raise ModelUnavailable(conversation.model)
        endpoint, model_name = chosen, conversation.model.partition("/")[2]
    if endpoint is None:
        raise NoProfileError(f"profile {profile.slug!r} names a missing endpoint")
    if not endpoint.enabled:
        raise ModelUnavailable(f"{endpoint.name}/{model_name}", chosen=False)
    instructions = config.instructions
    if conversation.skills:
        # The skills this conversation activated join the profile's own instructions.
        instructions = (
            *instructions,
            *skill_instructions(conversation.skills, revision),
        )
    if conversation.workspace_id is None:
        # Every conversation gets a workspace the first time it runs.
        with transaction.atomic():
            workspace = Workspace.objects.create(
                owner_id=user_id, name=conversation.title or "Workspace"
            )
            Conversation.objects.filter(id=conversation.id).update(workspace=workspace)
        workspace_id = str(workspace.id)
    else:
        workspace_id = str(conversation.workspace_id)
    return RuntimeSpec(
        conversation_id=str(conversation.id),
        user_id=user_id,
        workspace_id=workspace_id,
        profile=profile,
        endpoint=endpoint,
        tools=config.tools,
        policy=config.policy,
        rules=config.rules,
        scope=config.scope,
        instructions=instructions,
        model_name=model_name,
        thinking=conversation.thinking or profile.thinking,
        read_only=conversation.read_only or profile.read_only,
        title=conversation.title,
        usage=conversation.token_usage(),
        cost=conversation.cost,
        mcp_servers=config.mcp_servers,
    )


@dataclass(frozen=True, slots=True)
class LoadedSession:
    """A session's rows and stored snapshots, read in one synchronous step."""

    spec: RuntimeSpec
    conversation: Mapping[str, Any] | None
    workspace: Mapping[str, Any] | None


def load_session(conversation_id: str, user_id: int) -> LoadedSession:
    """``load_spec`` plus the conversation's and workspace's stored snapshots."""
    spec = load_spec(conversation_id, user_id)
    return LoadedSession(
        spec,
        DjangoConversationStore(owner=user_id).get_sync(spec.conversation_id),
        DjangoWorkspaceStore(owner=user_id).get_sync(spec.workspace_id),
    )
