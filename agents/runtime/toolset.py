"""Turn enabled ``agents.Tool`` rows into the kit ``ToolManager`` a run's agent calls.

A ``builtin`` row names a factory in the ``ToolRegistry``; an ``http`` row becomes an
operator-defined HTTP tool, a ``command`` row an operator-defined command. Every tool is
guarded (argument schema, the row's timeout; a command bounds its own time, so its guard's
deadline is a backstop behind it). What the operator wrote on the row (description, summary,
parameters) wins over a built-in's defaults; a row left at its defaults keeps the built-in's
own. The row's safety is the tool's own unless marked always or never safe, either way for a
built-in too (``Tool.safety``). ``RowTools`` is the rows as a run's tool source (``sources``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jsonschema import SchemaError

from orkestrel.core import Scope, Tool, ToolManager, create_tool

from ..models import Tool as ToolRow
from ..validators import default_parameters
from .arguments import guard_tool
from .command_tools import build_command_tool, guard_timeout
from .http_tools import build_http_tool
from .registry import BuiltinTool, ToolContext, ToolRegistry, builtin_tools
from .time_limits import cleanup_seconds

__all__ = ["RowTools", "build_tool", "build_tool_manager"]

logger = logging.getLogger(__name__)


def _builtin(row: ToolRow, entry: BuiltinTool, context: ToolContext) -> Tool:
    made = entry.factory(context)
    # The empty object schema is the row's default: it means "not set", not "no arguments".
    parameters = (
        row.parameters if row.parameters and row.parameters != default_parameters() else None
    )
    return create_tool(
        name=row.name,
        execute=made.execute,
        description=row.description or made.description or entry.description,
        summary=row.summary or made.summary,
        parameters=parameters if parameters is not None else made.parameters or entry.parameters,
        # Unset keeps the built-in's own, which may be a predicate over the call's arguments.
        safe=row.safety(made.safe),
    )


def build_tool(
    row: ToolRow, context: ToolContext, registry: ToolRegistry = builtin_tools
) -> Tool | None:
    """The guarded kit ``Tool`` for one row, or ``None`` (disabled, unknown built-in, broken)."""
    if not row.enabled:
        return None
    timeout = row.timeout
    cleanup = cleanup_seconds(context.settings)
    # A command bounds its own time (and honours a ``timeout`` argument): its guard is a backstop.
    asked: bool | None = None
    if row.kind == ToolRow.Kind.BUILTIN:
        entry = registry.get(row.name)
        if entry is None:
            logger.warning("tool %r names no registered built-in; skipped", row.name)
            return None
        tool = _builtin(row, entry, context)
    elif row.kind == ToolRow.Kind.HTTP:
        tool = build_http_tool(row)
    elif row.kind == ToolRow.Kind.COMMAND:
        tool = build_command_tool(row, context)
        timeout = guard_timeout(row.timeout, cleanup)
        asked = False
    else:
        logger.warning("tool %r has unknown kind %r; skipped", row.name, row.kind)
        return None
    try:
        return guard_tool(tool, timeout=timeout, cleanup=cleanup, asked=asked)
    except (SchemaError, ValueError) as error:
        logger.warning("tool %r is misconfigured (%s); skipped", row.name, error)
        return None


def build_tool_manager(
    rows: Iterable[ToolRow], context: ToolContext, registry: ToolRegistry = builtin_tools
) -> ToolManager:
    """A ``ToolManager`` of the enabled rows' tools, in the rows' order.

    ``rows`` should be loaded already (a list): iterating a lazy queryset here would query
    the database from the event loop.
    """
    manager = ToolManager()
    for row in rows:
        tool = build_tool(row, context, registry)
        if tool is not None:
            manager.add(tool)
    return manager


class RowTools:
    """The enabled tool rows of a profile as a tool source: built at once, nothing to open.

    Built synchronously (a job's agent is built so), from rows loaded already.
    """

    label = "tool rows"

    def __init__(
        self, rows: Iterable[ToolRow], context: ToolContext, registry: ToolRegistry = builtin_tools
    ) -> None:
        self.manager = build_tool_manager(rows, context, registry)

    async def open(self) -> None:
        return None

    def tools(self) -> Sequence[Tool]:
        return self.manager.tools()

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        tool = self.manager.tool(name)
        if tool is None:
            raise LookupError(f"tool not found: {name}")
        return await tool.run(arguments)

    def admitted_by(self, scope: Scope) -> bool:
        # A row's tool passes a scope's allow-list by its own name, as before sources.
        return False

    def watch(self, listener: Callable[[], None]) -> None:
        return None

    async def close(self) -> None:
        return None
