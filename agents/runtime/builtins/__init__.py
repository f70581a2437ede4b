"""The built-in tools, registered through ``ToolRegistry.register`` as a third party would.

``register_builtins`` is called explicitly (at app start-up, or by a test on its own
registry); importing this package registers nothing.
"""

from __future__ import annotations

from types import ModuleType

from ..registry import BuiltinTool, ToolFactory, ToolRegistry, builtin_tools
from . import ask_user, conversation_search, delegate, http_fetch, skills, workspace

__all__ = ["register_builtins"]


# Each module names its tool (``NAME``, ``DESCRIPTION``, ``PARAMETERS``, ``SAFE``) beside the
# factory that builds it for one run; registered in this order.
_BUILTINS: tuple[tuple[ModuleType, ToolFactory], ...] = (
    (workspace, workspace.create_workspace_tool),
    (conversation_search, conversation_search.create_conversation_search_tool),
    (http_fetch, http_fetch.create_http_fetch_tool),
    (skills, skills.create_skills_tool),
    (delegate, delegate.create_delegate_tool),
    (ask_user, ask_user.create_ask_user_tool),
)


def register_builtins(registry: ToolRegistry = builtin_tools) -> tuple[BuiltinTool, ...]:
    """Register ``workspace``, ``conversation_search``, ``http_fetch``, ``skills``,
    ``delegate`` and ``ask_user`` on ``registry``."""
    return tuple(
        registry.register(
            module.NAME,
            factory,
            description=module.DESCRIPTION,
            parameters=module.PARAMETERS,
            safe=module.SAFE,
        )
        for module, factory in _BUILTINS
    )
