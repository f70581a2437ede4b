"""The kit's ``AgentRegistry`` over one job's agent profile.

A job names its profile by slug as the kit's ``provider`` (and as its ``authority`` when the
profile has a policy), so the kit's ``build`` resolves it through the registry's pools. What
the kit's job format has no names for (the profile's scope, instructions and tools, a
workspace) is added to the agent the kit built, from the same runtime pieces a chat session
uses, through the same composition root (``RunSources``): the profile's MCP servers the job's
user may use open before the job runs (``open``) and close once it settled (``close``). The
profile's defaults (system prompt, limit, timeout, token budget) are resolved at
build time, so a restored job runs under the profile's configuration of that moment; a job's
own bounds only lower the profile's (``runtime.caps``). The ``delegate`` built-in is bound to
the job here (``delegation.job_tools``), and the job's progress meter to each agent built
(and, through a ``TextTap``, to the profile's provider).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from orkestrel.core import AbortSignal, Agent, AgentJobInput, AgentRegistry, WorkspaceManager
from orkestrel.telemetry.observer import observe

from ..authority import PolicyAuthority
from ..runtime.caps import Bounds, Caps
from ..runtime.mcp_input import DECLINE
from ..runtime.mcp_tools import McpToolSource
from ..runtime.progress import ProgressMeter, TextTap
from ..runtime.providers import provider_for
from ..runtime.registry import ToolContext
from ..runtime.sources import RunSources, usable_servers
from ..runtime.telemetry import job_labels
from ..runtime.toolset import RowTools
from .delegation import JobDelegator, job_tools
from .records import JobSpec

__all__ = ["ProfileRegistry"]


class ProfileRegistry(AgentRegistry):
    """Builds a job's agent with its profile's provider, authority, tools, scope, instructions."""

    def __init__(
        self,
        spec: JobSpec,
        *,
        delegator: JobDelegator | None = None,
        meter: ProgressMeter | None = None,
    ) -> None:
        profile, config = spec.profile, spec.config
        if config.endpoint is None:
            raise LookupError(f"unknown provider: {profile.slug}")
        authorities = (
            {profile.slug: PolicyAuthority(config.policy, config.rules)}
            if config.policy is not None
            else None
        )
        provider = provider_for(config.endpoint, profile.model_name)
        super().__init__(
            providers={profile.slug: TextTap(provider, meter.text) if meter else provider},
            authorities=authorities,
        )
        self.spec = spec
        self.delegator = delegator
        self.meter = meter
        self.sources = RunSources(())

    async def open(self) -> None:
        """Open the profile's MCP servers the job's user may use, before the job runs."""
        servers = await usable_servers(self.spec.config.mcp_servers, self.spec.user_id)
        # A job has nobody to ask: a server's request for input is declined at once.
        self.sources = RunSources(McpToolSource(server, inputs=DECLINE) for server in servers)
        await self.sources.open()

    async def close(self) -> None:
        """Close what ``open`` opened, once the job settled."""
        await self.sources.close()

    def resolve(self, job: AgentJobInput | Mapping[str, Any]) -> AgentJobInput:
        """``job`` with the profile's parts: its prompt first, its bounds as caps (a job's own
        step limit, timeout and token budget may lower the profile's, never raise them).

        The profile's authority always applies: a job cannot name another one, nor none.
        """
        profile = self.spec.profile
        resolved: AgentJobInput = {
            "provider": str(job.get("provider", "")),
            "messages": list(job.get("messages") or []),
        }
        system = "\n\n".join(
            part
            for part in (profile.system_prompt, job.get("system"))
            if isinstance(part, str) and part
        )
        if system:
            resolved["system"] = system
        # Lowered to the profile's caps here, not only at the door: a job stored before an
        # operator tightened its profile (or restored after) runs within the profile as it is.
        bounds = Caps.of(profile).resolve(
            Bounds(
                limit=_integer(job.get("limit")),
                timeout=_seconds(job.get("timeout")),
                budget=_integer(job.get("budget")),
            )
        )
        if bounds.limit is not None:
            resolved["limit"] = bounds.limit
        if bounds.timeout is not None:
            resolved["timeout"] = bounds.timeout
        if bounds.budget:
            resolved["budget"] = bounds.budget
        if self.spec.config.policy is not None:
            resolved["authority"] = profile.slug
        return resolved

    def build(
        self, job: AgentJobInput | Mapping[str, Any], signal: AbortSignal | None = None
    ) -> Agent:
        """The kit's agent for ``job``, equipped with the profile's context and tools."""
        agent = super().build(self.resolve(job), signal)
        self._equip(agent)
        # Its spans and series, when traces or metrics are on (each attempt its own).
        spec = self.spec
        agent.observer = observe(
            lambda: job_labels(
                spec.record.id, spec.profile, spec.config.endpoint, spec.config.rules
            )
        )
        if self.meter is not None:
            self.meter.watch(agent)
        return agent

    def _equip(self, agent: Agent) -> None:
        spec, context = self.spec, agent.context
        job_id = spec.record.id
        context.scope = spec.config.scope
        if spec.config.instructions:
            context.instructions.add(list(spec.config.instructions))
        # A scratch workspace for the workspace tool: a job has no conversation to own one.
        workspaces = WorkspaceManager()
        workspaces.add(id=job_id)
        context.workspaces = workspaces
        rows = RowTools(
            spec.config.tools,
            ToolContext(
                user_id=spec.user_id,
                conversation_id=job_id,
                agent_context=context,
                settings=getattr(settings, "ORKESTREL", {}),
            ),
            job_tools(agent, self.delegator),
        )
        # Each attempt's agent gets the rows' tools (bound to it) and the servers' (shared).
        self.sources.equip(context, rows)


def _integer(value: object) -> int | None:
    # The kit validated the stored job: a bound is an integer or absent (``bool`` is not one).
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
