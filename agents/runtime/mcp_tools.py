"""An MCP server as a run's tool source: its tools as kit ``Tool``s named ``<server>__<tool>``.

``open`` reads the server's tools from the process's catalog, connecting only when the
listing is stale (the connection then stays for the run's calls); a server that cannot be
listed still shows its last known tools, which fail with the server's error when called, so
the model reads why and the run goes on. A tool is safe (read-only mode runs it, it may run
beside other safe calls) exactly when the server marks it ``readOnlyHint``, unless the
operator overrode it (``McpServer.safety``). The operator's allow-list drops the others.
A server that takes each user's own token is listed with the run's user's (one listing per
user); a user who entered none sees its known tools, whose calls ask them to add it. A server
with resources adds a tool to list and read them (``mcp_resource_tool``). A server that asks
the user for input mid-call is answered by ``inputs`` (the run's ``InputBridge``; a job's
declines); without it, the SDK refuses such requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from jsonschema import SchemaError

from orkestrel.core import Scope, Tool, create_tool

from ..mcp.catalog import ToolCatalog, catalog
from ..mcp.connection import McpConnection
from ..mcp.endpoint import McpEndpoint, OfferedTool
from ..mcp.errors import McpError, McpUserCredentialMissing
from ..mcp.names import tool_name
from ..mcp.results import payload_of
from ..validators import default_parameters
from .arguments import guard_tool
from .mcp_input import InputAsking
from .mcp_resource_tool import READ_RESOURCE, resource_tool

__all__ = ["McpToolSource"]

logger = logging.getLogger(__name__)

# A call may ask the user this many times within its backstop (the SDK's cap on a 2026-07-28
# call's input rounds is 10; each question is bounded by the bridge's own timeout).
ASKS_PER_CALL = 10


class McpToolSource:
    """The tools of one MCP server for one run (or job), over one lazy connection."""

    def __init__(
        self,
        endpoint: McpEndpoint,
        tools_catalog: ToolCatalog = catalog,
        inputs: InputAsking | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.catalog = tools_catalog
        self.inputs = inputs
        self.connection = McpConnection(
            endpoint,
            on_tools_changed=self._announced,
            asker=partial(inputs.ask, endpoint.name) if inputs is not None else None,
        )
        self._tools: tuple[Tool, ...] = ()
        # The model's name of each tool → the server's own.
        self._names: dict[str, str] = {}
        self._listener: Callable[[], None] | None = None
        self._refresh: asyncio.Task[None] | None = None
        # Set each time a change the server announced has reached the run's tools.
        self.refreshed = asyncio.Event()

    @property
    def label(self) -> str:
        return f"MCP server {self.endpoint.name!r}"

    async def open(self) -> None:
        offered = self.catalog.fresh(self.endpoint)
        if offered is None:
            offered = await self._list()
        self._build(offered)

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        own = self._names.get(name, name)
        result = await self.connection.call(own, arguments)
        return payload_of(result, self.endpoint.name, own)

    def admitted_by(self, scope: Scope) -> bool:
        return scope.name in self.endpoint.scopes

    def watch(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    async def close(self) -> None:
        refresh = self._refresh
        if refresh is not None and not refresh.done():
            refresh.cancel()
            await asyncio.gather(refresh, return_exceptions=True)
        await self.connection.close()

    async def _list(self) -> tuple[OfferedTool, ...]:
        """A fresh listing (stored in the catalog), else the last known one."""
        try:
            listing = await self.connection.list_tools()
        except McpUserCredentialMissing:
            # The user's to fix, not the operator's: their calls tell the model so.
            return self.catalog.last_known(self.endpoint)
        except McpError as error:
            logger.warning("%s could not list its tools: %s", self.label, error)
            return self.catalog.last_known(self.endpoint)
        self.catalog.store(self.endpoint, listing)
        return listing.tools

    def _announced(self) -> None:
        """The server said its tools changed: list them again and tell the run."""
        self.catalog.evict(self.endpoint)
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._refreshed())

    async def _refreshed(self) -> None:
        self._build(await self._list())
        if self._listener is not None:
            self._listener()
        self.refreshed.set()

    def _build(self, offered: Sequence[OfferedTool]) -> None:
        tools: list[Tool] = []
        names: dict[str, str] = {}
        for item in offered:
            if not self.endpoint.allows(item.name):
                continue
            name = tool_name(self.endpoint.name, item.name)
            if name in names:
                logger.warning(
                    "%s: tools %r and %r share the name %r; the second is left out",
                    self.label,
                    names[name],
                    item.name,
                    name,
                )
                continue
            tool = self._tool(name, item)
            if tool is not None:
                tools.append(tool)
                names[name] = item.name
        if self.catalog.offers_resources(self.endpoint) and self.endpoint.allows(READ_RESOURCE):
            reader = resource_tool(self.connection)
            if reader.name not in names:  # the server's own tool of that name wins
                tools.append(reader)
        self._tools, self._names = tuple(tools), names

    def _tool(self, name: str, item: OfferedTool) -> Tool | None:
        endpoint = self.endpoint

        async def execute(arguments: Mapping[str, Any]) -> Any:
            return await self.call(name, arguments)

        tool = create_tool(
            name=name,
            execute=execute,
            description=item.description or f"The tool {item.name!r} of {endpoint.name}.",
            parameters=dict(item.input_schema) or default_parameters(),
            # The operator's word first, else the server's hint; unsaid is a write.
            safe=endpoint.safety.get(item.name, item.read_only is True),
        )
        # The connection bounds its own time; the guard's deadline is a backstop (with room
        # for the person the server may ask meanwhile).
        asking = self.inputs.timeout * ASKS_PER_CALL if self.inputs is not None else 0.0
        try:
            return guard_tool(
                tool, timeout=endpoint.connect_timeout + endpoint.call_timeout * 2 + asking
            )
        except (SchemaError, ValueError) as error:
            logger.warning("%s: tool %r is left out (%s)", self.label, item.name, error)
            return None
