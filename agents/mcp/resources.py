"""A server's resources (MCP ``resources/list``, ``resources/read``): read by the model through
a tool, attached by the user in the chat.

Text contents come back as text; binary ones are named with their type and size, not
included (the model reads text; an attachment is text in the composer). A read is cut to
``MAX_RESOURCE_CHARS`` with a note saying so.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from functools import partial

import mcp_types as types
from mcp import Client

from .connection import MAX_PAGES, McpConnection

__all__ = [
    "MAX_RESOURCE_CHARS",
    "OfferedResource",
    "ResourceText",
    "list_resources",
    "offers_resources",
    "read_resource",
]

# What one read gives at most (a resource can be a whole database dump).
MAX_RESOURCE_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class OfferedResource:
    """One resource a server lists."""

    server: str
    uri: str
    name: str
    description: str
    mime: str

    def as_json(self) -> dict[str, str]:
        return {
            "server": self.server,
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mime": self.mime,
        }


@dataclass(frozen=True, slots=True)
class ResourceText:
    """One part of a resource read, as text."""

    uri: str
    mime: str
    text: str

    def as_json(self) -> dict[str, str]:
        return {"uri": self.uri, "mime": self.mime, "text": self.text}


async def offers_resources(connection: McpConnection) -> bool:
    """Whether the server said it has resources."""
    return (await connection.capabilities()).resources is not None


async def list_resources(connection: McpConnection) -> tuple[OfferedResource, ...]:
    """Every resource the server lists, following its pages (none if it offers none)."""
    if not await offers_resources(connection):
        return ()
    server = connection.endpoint.name
    found: list[OfferedResource] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await connection.ask(partial(_resources_page, cursor=cursor))
        found.extend(
            OfferedResource(
                server,
                str(item.uri),
                item.title or item.name,
                item.description or "",
                item.mime_type or "",
            )
            for item in page.resources
        )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(found)


async def read_resource(connection: McpConnection, uri: str) -> tuple[ResourceText, ...]:
    """The contents of the resource at ``uri``, as text (``McpError``: refused or unknown)."""
    result: types.ReadResourceResult = await connection.ask(
        lambda client: client.read_resource(uri, cache_mode="bypass")
    )
    parts: list[ResourceText] = []
    budget = MAX_RESOURCE_CHARS
    for item in result.contents:
        mime = item.mime_type or ""
        if isinstance(item, types.TextResourceContents):
            text = item.text
            if len(text) > budget:
                text = f"{text[:budget]}\n[cut at {MAX_RESOURCE_CHARS} characters]"
        else:
            text = f"[binary {mime or 'content'}, {_size(item.blob)} bytes, not included]"
        budget = max(0, budget - len(text))
        parts.append(ResourceText(str(item.uri), mime, text))
    return tuple(parts)


async def _resources_page(client: Client, cursor: str | None) -> types.ListResourcesResult:
    return await client.list_resources(cursor=cursor, cache_mode="bypass")


def _size(blob: str) -> int:
    try:
        return len(base64.b64decode(blob, validate=True))
    except (binascii.Error, ValueError):
        return len(blob) * 3 // 4
