"""The built-in tools, registered through ``ToolRegistry.register`` as a third party would.

``register_builtins`` is called explicitly (at app start-up, or by a test on its own
registry); importing this package registers nothing.
"""

from __future__ import annotations

from ..registry import BuiltinTool, ToolRegistry, builtin_tools
from . import conversation_search, delegate, http_fetch, skills, workspace

__all__ = ["register_builtins"]


def register_builtins(registry: ToolRegistry = builtin_tools) -> tuple[BuiltinTool, ...]:
    """Register ``workspace``, ``conversation_search``, ``http_fetch``, ``skills`` and
    ``delegate`` on ``registry``."""
    return (
        registry.register(
            workspace.NAME,
            workspace.create_workspace_tool,
            description=workspace.DESCRIPTION,
            parameters=workspace.PARAMETERS,
            safe=workspace.SAFE,
        ),
        registry.register(
            conversation_search.NAME,
            conversation_search.create_conversation_search_tool,
            description=conversation_search.DESCRIPTION,
            parameters=conversation_search.PARAMETERS,
            safe=conversation_search.SAFE,
        ),
        registry.register(
            http_fetch.NAME,
            http_fetch.create_http_fetch_tool,
            description=http_fetch.DESCRIPTION,
            parameters=http_fetch.PARAMETERS,
            safe=http_fetch.SAFE,
        ),
        registry.register(
            skills.NAME,
            skills.create_skills_tool,
            description=skills.DESCRIPTION,
            parameters=skills.PARAMETERS,
            safe=skills.SAFE,
        ),
        registry.register(
            delegate.NAME,
            delegate.create_delegate_tool,
            description=delegate.DESCRIPTION,
            parameters=delegate.PARAMETERS,
            safe=delegate.SAFE,
        ),
    )
