"""Helpers for the runtime's tool tests: a scriptable loopback server's state, contexts, calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.runtime.registry import ToolContext
from orkestrel.core import ToolManager, ToolResult, create_agent_context


@dataclass(frozen=True)
class Reply:
    """What the server answers on one path."""

    status: int = 200
    body: bytes | str | Any = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    """A loopback HTTP server answering ``routes[path]`` (404 otherwise), logging every request."""

    port: int = 0
    routes: dict[str, Reply] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [request.path for request in self.seen]


def tool_context(
    user_id: int = 1, conversation_id: str = "c-current", settings: dict[str, Any] | None = None
) -> ToolContext:
    """A tool context over a fresh agent context (no workspace registered)."""
    return ToolContext(
        user_id=user_id,
        conversation_id=conversation_id,
        agent_context=create_agent_context(),
        settings=settings or {},
    )


async def call(manager: ToolManager, name: str, **arguments: Any) -> ToolResult:
    """Dispatch one call the way the agent loop does: errors come back on the result."""
    return await manager.execute({"id": "call-1", "name": name, "arguments": arguments})
