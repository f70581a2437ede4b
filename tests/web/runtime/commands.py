"""Helpers for the command tool tests: a row as the admin saves it, a manager calling it."""

from __future__ import annotations

from agents.models import Tool as ToolRow
from agents.runtime.arguments import guard_tool
from agents.runtime.command_tools import build_command_tool, guard_timeout
from agents.sandbox import Sandbox
from orkestrel.core import ToolManager

from .helpers import tool_context

# A machine without a sandbox, for the tests of what happens there.
NO_SANDBOX = Sandbox(False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
TEXT = {"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}}


def command_row(program: str, argv: list[str], **fields) -> ToolRow:
    """A ``command`` row as the admin saves it (its validation, minus the uniqueness query)."""
    row = ToolRow(
        name=fields.pop("name", "cmd"),
        kind=ToolRow.Kind.COMMAND,
        program=program,
        argv=argv,
        parameters=fields.pop("parameters", TEXT),
        **fields,
    )
    row.clean_fields()
    row.clean()
    return row


def manager_for(row: ToolRow, context=None, sandbox: Sandbox | None = None) -> ToolManager:
    tool = build_command_tool(row, context or tool_context(), sandbox=sandbox)
    # As ``toolset.build_tool`` guards it: the command bounds its own time (an asked one too).
    return ToolManager(guard_tool(tool, timeout=guard_timeout(row.timeout), asked=False))
