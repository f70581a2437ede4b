"""The tool that lets the model read an MCP server's resources: ``<server>__read_resource``.

Given no ``uri`` it lists the server's resources (uri, name, description, type); given one it
reads it, as text. It changes nothing, so it is safe (read-only mode runs it), unless the
operator's safety override says otherwise; an allow-list that leaves out ``read_resource``
leaves it out. A server's own tool of that name wins over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orkestrel.core import Tool, create_tool

from ..mcp.connection import McpConnection
from ..mcp.names import tool_name
from ..mcp.resources import list_resources, read_resource
from .arguments import guard_tool

__all__ = ["READ_RESOURCE", "resource_tool"]

READ_RESOURCE = "read_resource"

_PARAMETERS = {
    "type": "object",
    "properties": {
        "uri": {
            "type": "string",
            "description": "The resource's URI, as listed; leave it out to list the resources.",
        }
    },
    "additionalProperties": False,
}


def resource_tool(connection: McpConnection) -> Tool:
    """The read tool of ``connection``'s server."""
    endpoint = connection.endpoint

    async def execute(arguments: Mapping[str, Any]) -> Any:
        uri = arguments.get("uri")
        if not uri:
            return [resource.as_json() for resource in await list_resources(connection)]
        parts = await read_resource(connection, str(uri))
        if len(parts) == 1:
            return parts[0].text
        return [part.as_json() for part in parts]

    tool = create_tool(
        name=tool_name(endpoint.name, READ_RESOURCE),
        execute=execute,
        description=f"List the resources of the MCP server {endpoint.name!r} (no uri), or read "
        "one (its uri).",
        parameters=_PARAMETERS,
        safe=endpoint.safety.get(READ_RESOURCE, True),
    )
    return guard_tool(tool, timeout=endpoint.connect_timeout + endpoint.call_timeout * 2)
