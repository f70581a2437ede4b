"""What a conversation's MCP servers offer the user besides tools: prompts (the chat's slash
commands) and resources (attached to a message), for the REST API the chat page calls.

The servers are those of the conversation's profile that its owner may use (with their own
token where a server takes one). Each look opens its own connections and closes them; a server
that cannot answer is named in ``unavailable`` and the others are still listed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from conversations.services import effective_profile, get_conversation

from ..mcp.connection import McpConnection
from ..mcp.credentials import with_credentials
from ..mcp.endpoint import McpEndpoint, load_profile_servers
from ..mcp.errors import McpError
from ..mcp.prompts import OfferedPrompt, PromptText, get_prompt, list_prompts
from ..mcp.resources import OfferedResource, ResourceText, list_resources, read_resource
from .spec import group_ids

__all__ = [
    "Offerings",
    "Unavailable",
    "conversation_servers",
    "prompt_messages",
    "offered_prompts",
    "offered_resources",
    "resource_contents",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A server that could not be asked, and why (never a token)."""

    server: str
    detail: str
    code: str


@dataclass(frozen=True, slots=True)
class Offerings[T]:
    """What the servers offered, and the servers that could not say."""

    items: tuple[T, ...]
    unavailable: tuple[Unavailable, ...]


def conversation_servers(user: AbstractBaseUser, conversation_id: str) -> tuple[McpEndpoint, ...]:
    """The MCP servers of ``user``'s conversation (``Http404``: not theirs) they may use."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    profile = effective_profile(conversation)
    if profile is None:
        return ()
    servers = load_profile_servers(profile.pk)
    user_id = int(user.pk)
    groups: list[int] | None = None

    def groups_of(_: int) -> list[int]:
        nonlocal groups
        if groups is None:
            groups = group_ids(user_id)
        return groups

    return with_credentials((s for s in servers if s.admits(user_id, groups_of)), user_id)


async def _each[T](
    servers: Sequence[McpEndpoint], look: Callable[[McpConnection], Awaitable[tuple[T, ...]]]
) -> Offerings[T]:
    async def one(server: McpEndpoint) -> tuple[T, ...] | Unavailable:
        connection = McpConnection(server)
        try:
            return await look(connection)
        except McpError as error:
            logger.info("MCP server %r could not be listed: %s", server.name, error)
            return Unavailable(server.name, str(error), error.code)
        finally:
            await connection.close()

    answers = await asyncio.gather(*(one(server) for server in servers))
    items = tuple(item for answer in answers if isinstance(answer, tuple) for item in answer)
    failed = tuple(answer for answer in answers if isinstance(answer, Unavailable))
    return Offerings(items, failed)


async def offered_prompts(servers: Sequence[McpEndpoint]) -> Offerings[OfferedPrompt]:
    """Every prompt of ``servers``, by server then name."""
    return await _each(servers, list_prompts)


async def offered_resources(servers: Sequence[McpEndpoint]) -> Offerings[OfferedResource]:
    """Every resource of ``servers``."""
    return await _each(servers, list_resources)


def _server(servers: Sequence[McpEndpoint], name: str) -> McpEndpoint:
    found = next((server for server in servers if server.name == name), None)
    if found is None:
        raise LookupError(name)
    return found


async def _once[T](server: McpEndpoint, ask: Callable[[McpConnection], Awaitable[T]]) -> T:
    connection = McpConnection(server)
    try:
        return await ask(connection)
    finally:
        await connection.close()


async def prompt_messages(
    servers: Sequence[McpEndpoint], server: str, prompt: str, arguments: Mapping[str, str]
) -> tuple[PromptText, ...]:
    """The messages of ``server``'s ``prompt`` (``LookupError``: no such server of the
    conversation's; ``McpError``: the server refused or could not answer)."""
    endpoint = _server(servers, server)
    return await _once(endpoint, lambda c: get_prompt(c, prompt, arguments))


async def resource_contents(
    servers: Sequence[McpEndpoint], server: str, uri: str
) -> tuple[ResourceText, ...]:
    """The text of ``server``'s resource at ``uri`` (errors as ``prompt_messages``)."""
    endpoint = _server(servers, server)
    return await _once(endpoint, lambda c: read_resource(c, uri))
