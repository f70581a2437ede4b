"""A one-shot look at a server for the admin and the command: connect, list, close.

A successful look also refreshes the process's cached listing and, with ``remember``, the
row's ``offered`` tools (shown in the admin; a run's fallback while the server is down).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from django.utils import timezone

from ..models import McpServer
from .catalog import catalog
from .connection import McpConnection
from .endpoint import McpEndpoint, OfferedTool, endpoint_of
from .errors import McpError

__all__ = ["ServerCheck", "check_endpoint", "check_server", "refresh_server"]


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


def refresh_server(row: McpServer) -> ServerCheck:
    """Look at ``row``'s server and store what it offers on the row when it answered."""
    result = check_server(endpoint_of(row, related=False))
    if result.ok:
        row.offered = [tool.as_json() for tool in result.tools]
        row.refreshed = timezone.now()
        row.save(update_fields=["offered", "refreshed", "updated"])
    return result
