"""Built-in tools register here, through the same public path a third party would use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orkestrel.core import Agent, AgentContext, Tool

from .reports import ToolReports

__all__ = ["BuiltinTool", "ToolContext", "ToolFactory", "ToolRegistry", "builtin_tools"]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool factory may use: who is chatting, where, and the live agent context.

    ``user_id`` and ``conversation_id`` let a tool query the database for that user only;
    ``agent_context`` is the running agent's context (its workspaces, conversations, scope);
    ``reports`` is where a tool reports on its calls while they run (a chat or API run's).
    """

    user_id: int
    conversation_id: str
    agent_context: AgentContext
    settings: Mapping[str, Any] = field(default_factory=dict)
    # The running agent itself (its budget and deadline), for tools that share them.
    agent: Agent | None = None
    # The run's listeners to running calls (``None``: nobody shows them, a job's own tools).
    reports: ToolReports | None = None


ToolFactory = Callable[[ToolContext], Tool]


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A registered built-in: its advertised schema and the factory that binds it to a run."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    safe: bool
    factory: ToolFactory


class ToolRegistry:
    """Named built-in tool factories; operators enable them by creating a ``builtin`` Tool row."""

    def __init__(self) -> None:
        self._tools: dict[str, BuiltinTool] = {}

    def register(
        self,
        name: str,
        factory: ToolFactory,
        *,
        description: str,
        parameters: Mapping[str, Any],
        safe: bool = False,
    ) -> BuiltinTool:
        """Register (or replace) the built-in ``name``."""
        if not isinstance(name, str) or not name:
            raise ValueError("built-in tool name must be a non-empty string")
        if not callable(factory):
            raise TypeError(f"built-in tool {name!r} factory must be callable")
        entry = BuiltinTool(name, description, dict(parameters), safe, factory)
        self._tools[name] = entry
        return entry

    def get(self, name: str) -> BuiltinTool | None:
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


# The process-wide registry. Built-ins are registered by ``agents.apps`` at start-up
# (``register_builtins``), never as an import side effect.
builtin_tools = ToolRegistry()
