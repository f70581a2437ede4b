"""A server's prompts (MCP ``prompts/list``, ``prompts/get``): the chat's slash commands.

A prompt is offered to the user as ``/<server>__<prompt>`` (the tools' naming); getting it with
its arguments gives the messages it stands for, as text: the chat puts them in the composer.
A server that offers no prompts lists none (without asking).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Literal

import mcp_types as types
from mcp import Client

from .connection import MAX_PAGES, McpConnection
from .errors import McpError
from .names import tool_name

__all__ = ["OfferedPrompt", "PromptArgument", "PromptText", "get_prompt", "list_prompts"]


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt takes."""

    name: str
    description: str
    required: bool


@dataclass(frozen=True, slots=True)
class OfferedPrompt:
    """One prompt of one server, as the slash menu lists it."""

    server: str
    name: str
    title: str
    description: str
    arguments: tuple[PromptArgument, ...]

    @property
    def command(self) -> str:
        """Its slash command's word: ``<server>__<prompt>``."""
        return tool_name(self.server, self.name)


@dataclass(frozen=True, slots=True)
class PromptText:
    """One message a prompt stands for, as text (other content is named, not included)."""

    role: Literal["user", "assistant"]
    text: str


async def list_prompts(connection: McpConnection) -> tuple[OfferedPrompt, ...]:
    """Every prompt the server offers, following its pages (none if it offers none)."""
    if (await connection.capabilities()).prompts is None:
        return ()
    server = connection.endpoint.name
    found: list[OfferedPrompt] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await connection.ask(partial(_prompts_page, cursor=cursor))
        found.extend(_offered(server, prompt) for prompt in page.prompts)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(found)


async def get_prompt(
    connection: McpConnection, name: str, arguments: Mapping[str, str]
) -> tuple[PromptText, ...]:
    """The messages of the server's prompt ``name`` with ``arguments`` (``McpError``: refused,
    e.g. a required argument left out)."""
    result: types.GetPromptResult = await connection.ask(
        lambda client: client.get_prompt(name, dict(arguments))
    )
    texts = tuple(PromptText(m.role, _text(m.content)) for m in result.messages)
    if not texts:
        raise McpError(f"MCP server {connection.endpoint.name!r}: prompt {name!r} is empty")
    return texts


async def _prompts_page(client: Client, cursor: str | None) -> types.ListPromptsResult:
    return await client.list_prompts(cursor=cursor, cache_mode="bypass")


def _offered(server: str, prompt: types.Prompt) -> OfferedPrompt:
    return OfferedPrompt(
        server=server,
        name=prompt.name,
        title=prompt.title or "",
        description=prompt.description or "",
        arguments=tuple(
            PromptArgument(item.name, item.description or "", bool(item.required))
            for item in prompt.arguments or ()
        ),
    )


def _text(block: types.ContentBlock) -> str:
    match block:
        case types.TextContent():
            return block.text
        case types.EmbeddedResource():
            text = getattr(block.resource, "text", None)
            return text if isinstance(text, str) else f"[resource {block.resource.uri}]"
        case types.ResourceLink():
            return f"[resource {block.uri}]"
        case types.ImageContent() | types.AudioContent():
            return f"[{block.type} {block.mime_type}]"
    return ""
