"""``build_tool_manager``: enabled rows become guarded kit tools; operators' texts win."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agents.models import Tool as ToolRow
from agents.runtime.builtins import http_fetch, register_builtins, workspace
from agents.runtime.registry import ToolRegistry
from agents.runtime.toolset import build_tool_manager
from orkestrel.core import create_tool

from .helpers import call, tool_context

pytestmark = pytest.mark.django_db


def saved(**fields) -> ToolRow:
    row = ToolRow(**fields)
    row.full_clean()
    row.save()
    return row


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    register_builtins(registry)
    return registry


def test_register_builtins_registers_the_six_builtins_with_their_schemas(registry):
    assert registry.names() == (
        "workspace",
        "conversation_search",
        "http_fetch",
        "skills",
        "delegate",
        "ask_user",
    )
    entry = registry.get("http_fetch")
    assert (entry.safe, entry.parameters["required"]) == (True, ["url"])
    assert registry.get("workspace").safe is False
    assert registry.get("conversation_search").safe is False
    assert registry.get("skills").safe is True
    assert (registry.get("ask_user").safe, registry.get("ask_user").parameters["required"]) == (
        True,
        ["question"],
    )


def test_enabled_rows_become_tools_and_disabled_or_unknown_ones_are_skipped(registry, caplog):
    saved(name="workspace", kind="builtin")
    saved(name="conversation_search", kind="builtin", enabled=False)
    saved(name="ghost", kind="builtin")
    saved(
        name="items",
        kind="http",
        url_template="http://127.0.0.1:9/items/{id}",
        parameters={"type": "object", "properties": {"id": {"type": "string"}}},
    )
    rows = list(ToolRow.objects.all())
    with caplog.at_level(logging.WARNING, logger="agents.runtime.toolset"):
        manager = build_tool_manager(rows, tool_context(), registry)
    assert [tool.name for tool in manager.tools()] == ["items", "workspace"]
    assert "tool 'ghost' names no registered built-in; skipped" in caplog.messages


def test_a_row_left_at_its_defaults_keeps_the_builtins_texts_and_schema(registry):
    saved(name="workspace", kind="builtin")
    tool = build_tool_manager(list(ToolRow.objects.all()), tool_context(), registry).tools()[0]
    assert (tool.description, tool.summary, tool.parameters, tool.safe) == (
        workspace.DESCRIPTION,
        None,
        workspace.PARAMETERS,
        # Per call: list, read and search are safe, edits are not.
        workspace.is_safe,
    )


def test_the_rows_description_summary_parameters_and_safe_win(registry):
    narrowed = {
        "type": "object",
        "properties": {"url": {"type": "string", "maxLength": 30}},
        "required": ["url"],
    }
    saved(
        name="http_fetch",
        kind="builtin",
        description="Fetch pages of our docs site.",
        summary="Fetch a docs page.",
        parameters=narrowed,
    )
    saved(name="workspace", kind="builtin", safe=True)
    manager = build_tool_manager(list(ToolRow.objects.all()), tool_context(), registry)
    fetch, edit = manager.tools()
    assert (fetch.description, fetch.summary, fetch.parameters) == (
        "Fetch pages of our docs site.",
        "Fetch a docs page.",
        narrowed,
    )
    # A built-in that declares itself safe stays safe; the operator can mark one safe.
    assert (fetch.safe, edit.safe) == (http_fetch.SAFE, True)
    assert manager.definitions()[0].description == "Fetch a docs page."
    # The row's schema is the one enforced.
    result = asyncio.run(call(manager, "http_fetch", url="https://example.com/" + "a" * 40))
    assert result.error.startswith("invalid arguments at $.url:")


def test_every_built_tool_validates_its_arguments(registry):
    saved(name="workspace", kind="builtin")
    manager = build_tool_manager(list(ToolRow.objects.all()), tool_context(), registry)
    result = asyncio.run(call(manager, "workspace", path="a.md"))
    assert result.error == "invalid arguments: 'operation' is a required property"


def test_a_third_party_builtin_runs_under_the_rows_timeout(registry):
    async def stall(arguments):
        await asyncio.Event().wait()

    registry.register(
        "sleepy",
        lambda context: create_tool(name="sleepy", execute=stall),
        description="Never answers.",
        parameters={"type": "object", "properties": {}},
    )
    saved(name="sleepy", kind="builtin", timeout=0.05)
    manager = build_tool_manager(list(ToolRow.objects.all()), tool_context(), registry)
    tool = manager.tool("sleepy")
    assert (tool.description, tool.parameters) == (
        "Never answers.",
        {"type": "object", "properties": {}},
    )
    assert asyncio.run(call(manager, "sleepy")).error == "timed out after 0.05s"


def test_the_factory_receives_the_runs_context(registry):
    seen = []

    def factory(context):
        seen.append(context)
        return create_tool(name="probe", execute=lambda: context.user_id)

    registry.register("probe", factory, description="Who am I?", parameters={"type": "object"})
    saved(name="probe", kind="builtin")
    context = tool_context(user_id=42)
    manager = build_tool_manager(list(ToolRow.objects.all()), context, registry)
    assert seen == [context]
    assert asyncio.run(call(manager, "probe")).value == 42
