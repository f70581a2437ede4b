"""What an MCP tool is called where the model sees it: ``<server>__<tool>``, 64 characters."""

from __future__ import annotations

import re

__all__ = ["MAX_TOOL_NAME", "SEPARATOR", "tool_name"]

# What providers accept in a tool name (OpenAI and Anthropic: ``^[a-zA-Z0-9_-]{1,64}$``).
MAX_TOOL_NAME = 64
SEPARATOR = "__"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The model's name for ``tool`` of ``server``: characters providers refuse become ``_``,
    and the whole is cut to 64 (the server's name first, so two servers never clash)."""
    return f"{server}{SEPARATOR}{_NOT_ALLOWED.sub('_', tool)}"[:MAX_TOOL_NAME]
