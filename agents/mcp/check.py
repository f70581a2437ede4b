"""A one-shot look at a server for the admin and the command: connect, list, close.

A successful look also refreshes the process's cached listing and, for ``refresh_server``,
the row's ``offered`` tools (shown in the admin; a run's fallback while the server is down).
A server that takes each user's own token is looked at with the operator's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from django.utils import timezone

from ..models import McpServer
from .catalog import catalog
from .connection import McpConnection
from .credentials import with_credentials
from .endpoint import McpEndpoint, OfferedTool, endpoint_of
from .errors import McpError

__all__ = ["ServerCheck", "check_endpoint", "check_server", "endpoint_as", "refresh_server"]


@dataclass(frozen=True, slots=True)
class ServerCheck:
    """The outcome of one look: ``ok``, a one-line ``detail`` (never a token), the tools."""

    ok: bool
    detail: str
    tools: tuple[OfferedTool, ...] = ()
    code: str = ""


async def check_endpoint(endpoint: McpEndpoint) -> ServerCheck:
    """Connect to ``endpoint``, list its tools and close."""
    connection = McpConnection(endpoint)
    try:
        listing = await connection.list_tools()
    except McpError as error:
        return ServerCheck(False, str(error), code=error.code)
    finally:
        await connection.close()
    catalog.store(endpoint, listing)
    count = len(listing.tools)
    return ServerCheck(True, f"{count} tool{'s' if count != 1 else ''} offered", listing.tools)


def check_server(endpoint: McpEndpoint) -> ServerCheck:
    """``check_endpoint`` from synchronous code (an admin action, a command)."""
    return asyncio.run(check_endpoint(endpoint))


def endpoint_as(row: McpServer, user_id: int | None) -> McpEndpoint:
    """``row``'s endpoint as ``user_id`` reaches it (their own token, where it takes one)."""
    endpoint = endpoint_of(row, related=False)
    if user_id is None:
        return endpoint
    (endpoint,) = with_credentials((endpoint,), user_id)
    return endpoint


def refresh_server(row: McpServer, user_id: int | None = None) -> ServerCheck:
    """Look at ``row``'s server (as ``user_id``) and store what it offers on the row when it
    answered."""
    result = check_server(endpoint_as(row, user_id))
    if result.ok:
        row.offered = [tool.as_json() for tool in result.tools]
        row.refreshed = timezone.now()
        row.save(update_fields=["offered", "refreshed", "updated"])
    return result
