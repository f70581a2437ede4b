"""orkestrel as an MCP server at ``/mcp`` (Streamable HTTP, every protocol revision the SDK
serves): each agent profile the API key's user may use is a tool named by its slug, and a call
is an ordinary run of a conversation whose ``origin`` is ``mcp``.

Modules: ``access`` (the host, the API key and its request budget), ``tools`` (the tools, their
arguments and results), ``approvals`` (held calls as forms, or named in an error), ``calls``
(one tool call: start, wait, ask, answer, through the run service) and ``server`` (the SDK's
server and session manager, entered on first use, and the ``/mcp`` route in front of Django).
"""

from .server import MCP_PATH, McpDoor, mcp_door, with_mcp

__all__ = ["MCP_PATH", "McpDoor", "mcp_door", "with_mcp"]
