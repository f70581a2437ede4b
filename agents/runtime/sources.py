"""Tool sources: where a run's tools come from, opened before it and closed after it settles.

A ``ToolSource`` is the shape of pydantic-ai's toolsets and openai-agents' MCP servers: open
(connect, list), hand out kit ``Tool``s whose handlers ``call`` back into it, close. The
database's tool rows are one source (``toolset.RowTools``), each MCP server another
(``mcp_tools.McpToolSource``). ``RunSources`` is the one composition root of a run's (or a
job's) tools: it opens its sources together, puts their tools on the agent's context, and
widens a scope's tool allow-list for the sources the scope admits as a whole. The tools are
kit ``Tool``s like any other, so authority rules, scopes, read-only mode, approvals, call
ordering, usage and the transcript treat them alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

from orkestrel.core import AgentContext, Scope, Tool
from orkestrel.db import in_thread

from ..mcp.credentials import with_credentials
from ..mcp.endpoint import McpEndpoint
from .spec import group_ids

__all__ = ["RunSources", "ToolSource", "usable_servers"]

logger = logging.getLogger(__name__)


class ToolSource(Protocol):
    """An asynchronous, closable source of tools."""

    @property
    def label(self) -> str:
        """What logs and errors call the source."""
        ...

    async def open(self) -> None:
        """Connect and list (a source that cannot still opens: its tools say why)."""
        ...

    def tools(self) -> Sequence[Tool]:
        """The tools listed at ``open`` (or since its last change)."""
        ...

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run the source's tool ``name`` (the name the model uses)."""
        ...

    def admitted_by(self, scope: Scope) -> bool:
        """Whether ``scope`` lets all of the source's tools through, named or not."""
        ...

    def watch(self, listener: Callable[[], None]) -> None:
        """Be told when ``tools()`` changed (a server announced new tools)."""
        ...

    async def close(self) -> None:
        """Release what ``open`` and the calls took (idempotent)."""
        ...


class RunSources:
    """The tool sources of one run or job: opened together, equipped, closed together."""

    def __init__(self, sources: Iterable[ToolSource]) -> None:
        self.sources: tuple[ToolSource, ...] = tuple(sources)
        self._context: AgentContext | None = None
        self._scope: Scope | None = None
        self._names: dict[int, tuple[str, ...]] = {}
        # The sources ``equip`` was handed open (a job's rows, built per agent).
        self._also: tuple[ToolSource, ...] = ()
        self.closed = False
        # The close ``close_soon`` scheduled, while it runs or once it ran.
        self.closing: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Open every source at once: a slow server does not wait behind another."""
        await asyncio.gather(*(_open(source) for source in self.sources))

    def equip(self, context: AgentContext, *also: ToolSource) -> None:
        """Put the sources' tools (``also``'s first, already open) on ``context``, in order,
        and widen its scope for the sources it admits; changes reach it later too."""
        self._also = also
        self._context, self._scope = context, context.scope
        self._names = {}
        for source in self._all():
            source.watch(partial(self._changed, source))
            self._add(source)
        self._rescope()

    def _all(self) -> tuple[ToolSource, ...]:
        return (*self._also, *self.sources)

    async def close(self) -> None:
        """Close every source (after the run or job settled)."""
        if self.closed:
            return
        self.closed = True
        sources = self._all()
        results = await asyncio.gather(
            *(source.close() for source in sources), return_exceptions=True
        )
        for source, result in zip(sources, results, strict=True):
            if isinstance(result, Exception):
                logger.warning("closing tool source %s failed: %s", source.label, result)

    def close_soon(self, *_: object) -> None:
        """``close`` from a synchronous listener (the agent's ``finish`` or ``error``)."""
        if not self.closed and self.closing is None:
            task = self.closing = asyncio.get_running_loop().create_task(self.close())
            _closing.add(task)
            task.add_done_callback(_closing.discard)

    def _add(self, source: ToolSource) -> None:
        assert self._context is not None
        tools = tuple(source.tools())
        for tool in tools:
            self._context.tools.add(tool)
        self._names[id(source)] = tuple(tool.name for tool in tools)

    def _changed(self, source: ToolSource) -> None:
        if self._context is None:
            return
        self._context.tools.remove(list(self._names.get(id(source), ())))
        self._add(source)
        self._rescope()

    def _rescope(self) -> None:
        scope, context = self._scope, self._context
        if scope is None or scope.tools is None or context is None:
            return
        admitted = [
            name
            for source in self._all()
            if source.admitted_by(scope)
            for name in self._names.get(id(source), ())
        ]
        context.scope = replace(scope, tools=(*scope.tools, *admitted)) if admitted else scope


# Closes scheduled from listeners, kept referenced until they end.
_closing: set[asyncio.Task[None]] = set()


async def _open(source: ToolSource) -> None:
    try:
        await source.open()
    except Exception:  # one broken source must not keep a run from starting
        logger.exception("tool source %s could not open; its tools are left out", source.label)


async def usable_servers(servers: Sequence[McpEndpoint], user_id: int) -> tuple[McpEndpoint, ...]:
    """The servers ``user_id``'s runs may use (their groups read only when one asks), each
    per-user one carrying the user's own credential."""
    groups: list[int] | None = None
    if any(server.needs_groups for server in servers):
        groups = await in_thread(group_ids)(user_id)

    def groups_of(_: int) -> list[int]:
        return groups or []

    usable = tuple(server for server in servers if server.admits(user_id, groups_of))
    if any(server.per_user for server in usable):
        usable = await in_thread(with_credentials)(usable, user_id)
    return usable
