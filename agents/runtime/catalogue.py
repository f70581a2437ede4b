"""What a conversation's agent can do: its effective tool catalogue.

The catalogue is the tools a run of the conversation would offer its model, built the way a
run builds them (``ChatSession.build``: the profile's enabled tool rows, then the MCP servers
the user may use, their connections opened and closed again), kept to the profile's scope.
Each entry says whether its calls run in read-only mode (``safe``; ``read_only`` tells a tool
whose safety depends on the call, the workspace tool's, from one that is never safe) and
whether an ``ask`` rule of the profile's authority policy can hold a call for a person
(``asks``: a rule whose glob names the tool, not behind an unconditional rule that decides
its calls first).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from orkestrel.core import Tool
from orkestrel.core.scopes import filter_allow_list
from orkestrel.db import in_thread

from ..models import AuthorityRule
from .mcp_tools import McpToolSource
from .session import ChatSession
from .spec import RuntimeSpec, load_spec

__all__ = [
    "CatalogueEntry",
    "CatalogueEntryPayload",
    "CataloguePayload",
    "ReadOnly",
    "ToolCatalogue",
    "asked_by",
    "tool_catalogue",
]

ReadOnly = Literal["all", "some", "none"]
Source = Literal["builtin", "http", "command", "mcp"]


class CatalogueEntryPayload(TypedDict):
    """One tool as the API and the chat show it."""

    name: str
    description: str
    safe: bool
    read_only: ReadOnly
    asks: bool
    source: Source


class CataloguePayload(TypedDict):
    """The catalogue as the API answers it."""

    read_only: bool
    tools: list[CatalogueEntryPayload]


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogueEntry:
    """One tool the conversation's agent can call (see the module)."""

    name: str
    description: str
    read_only: ReadOnly
    asks: bool
    source: Source

    @property
    def safe(self) -> bool:
        """Whether every call of it runs in read-only mode."""
        return self.read_only == "all"

    def payload(self) -> CatalogueEntryPayload:
        return {
            "name": self.name,
            "description": self.description,
            "safe": self.safe,
            "read_only": self.read_only,
            "asks": self.asks,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCatalogue:
    """A conversation's tools, and whether it is in read-only mode (writes refused)."""

    read_only: bool
    tools: tuple[CatalogueEntry, ...]

    def payload(self) -> CataloguePayload:
        return {"read_only": self.read_only, "tools": [tool.payload() for tool in self.tools]}


def asked_by(name: str, rules: Sequence[AuthorityRule]) -> bool:
    """Whether an ``ask`` rule among ``rules`` (in order, the first match decides) can hold a
    call of tool ``name``."""
    for rule in rules:
        if not fnmatch.fnmatchcase(name, rule.tool_glob):
            continue
        if rule.asks:
            return True
        if not rule.conditions:
            # It matches every call of the tool, before any later rule can.
            return False
    return False


def _read_only(tool: Tool) -> ReadOnly:
    if tool.safe is True:
        return "all"
    if tool.safe is False:
        return "none"
    return "some"  # a predicate over the call's arguments


def _sources(spec: RuntimeSpec, session: ChatSession) -> dict[str, Source]:
    kinds: dict[str, Source] = {}
    for source in session.sources.sources:
        if isinstance(source, McpToolSource):
            kinds.update((tool.name, "mcp") for tool in source.tools())
    for row in spec.tools:
        kind = row.kind
        kinds[row.name] = (
            "http" if kind == "http" else "command" if kind == "command" else "builtin"
        )
    return kinds


async def tool_catalogue(conversation_id: str, user_id: int) -> ToolCatalogue:
    """The catalogue of ``user_id``'s conversation (``Conversation.DoesNotExist`` for one that
    is not theirs); MCP servers are asked for their tools, as a run would."""
    spec = await in_thread(load_spec)(conversation_id, user_id)
    # No history or files are needed to know the tools: the session starts empty.
    session = await ChatSession.build(spec, preloaded=True)
    try:
        context = session.agent.context
        scope = context.scope
        tools = filter_allow_list(
            context.tools.tools(), scope.tools if scope is not None else None, lambda t: t.name
        )
        kinds = _sources(spec, session)
        entries = tuple(
            CatalogueEntry(
                name=tool.name,
                description=tool.description or tool.summary or "",
                read_only=_read_only(tool),
                asks=asked_by(tool.name, spec.rules),
                source=kinds.get(tool.name, "builtin"),
            )
            for tool in tools
        )
    finally:
        await session.close()
    return ToolCatalogue(read_only=spec.read_only, tools=entries)
