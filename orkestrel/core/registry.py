"""The job-rehydration bridge: named pools of live pieces, and ``build`` from a job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Required, TypedDict, Unpack

from .abort import AbortSignal
from .agent import Agent
from .authority import Authority
from .budget import create_token_budget
from .conversation_manager import ConversationManager
from .conversation_store import ConversationStore
from .jobs import AgentJobInput, validate_job
from .provider import Provider
from .scheduler import Scheduler
from .tools import Tool, ToolManager

__all__ = ["AgentRegistry", "create_agent_registry"]


class RegistryOptions(TypedDict, total=False):
    """The keyword options of ``AgentRegistry`` / ``create_agent_registry``."""

    providers: Required[Mapping[str, Provider]]
    tools: Mapping[str, Tool] | None
    authorities: Mapping[str, Authority] | None
    schedulers: Mapping[str, Scheduler] | None
    store: ConversationStore | None


def _pool[T](name: str, value: Mapping[str, T] | None) -> dict[str, T]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must map names to {name}")
    return dict(value)


class AgentRegistry:
    """Resolves a job's names (raising ``LookupError('unknown <category>: <name>')``)."""

    def __init__(
        self,
        *,
        providers: Mapping[str, Provider],
        tools: Mapping[str, Tool] | None = None,
        authorities: Mapping[str, Authority] | None = None,
        schedulers: Mapping[str, Scheduler] | None = None,
        store: ConversationStore | None = None,
    ) -> None:
        self._providers = _pool("providers", providers)
        self._tools = _pool("tools", tools)
        self._authorities = _pool("authorities", authorities)
        self._schedulers = _pool("schedulers", schedulers)
        self._store = store

    def _lookup[T](self, category: str, pool: dict[str, T], name: str) -> T:
        try:
            return pool[name]
        except (KeyError, TypeError):
            raise LookupError(f"unknown {category}: {name}") from None

    def provider(self, name: str) -> Provider:
        return self._lookup("provider", self._providers, name)

    def tool(self, name: str) -> Tool:
        return self._lookup("tool", self._tools, name)

    def authority(self, name: str) -> Authority:
        return self._lookup("authority", self._authorities, name)

    def scheduler(self, name: str) -> Scheduler:
        return self._lookup("scheduler", self._schedulers, name)

    def build(
        self, job: AgentJobInput | Mapping[str, Any], signal: AbortSignal | None = None
    ) -> Agent:
        """Rehydrate a seeded agent from ``job`` (validated first), its signal from ``signal``."""
        job = validate_job(job)
        provider = self.provider(job["provider"])
        tools = ToolManager()
        names = job.get("tools") or []
        if names:
            tools.add([self.tool(name) for name in names])
        authority = self.authority(job["authority"]) if job.get("authority") else None
        scheduler = self.scheduler(job["scheduler"]) if job.get("scheduler") else None
        budget = create_token_budget(job["budget"]) if job.get("budget") is not None else None
        agent = Agent(
            provider,
            system=job.get("system"),
            tools=tools,
            authority=authority,
            scheduler=scheduler,
            limit=job.get("limit"),
            timeout=job.get("timeout"),
            budget=budget,
            signal=signal,
            conversations=ConversationManager(store=self._store),
        )
        if job.get("messages"):
            agent.context.messages.add(list(job["messages"]))
        return agent


def create_agent_registry(**options: Unpack[RegistryOptions]) -> AgentRegistry:
    """Create an ``AgentRegistry`` from named pools (``providers`` is required)."""
    return AgentRegistry(**options)
