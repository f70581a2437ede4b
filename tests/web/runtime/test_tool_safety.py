"""A tool row's safety: the tool's own, always safe or never safe, for built-ins too.

Read-only mode and a turn's batching follow it: only safe calls run in read-only mode, and a
call that is not safe runs alone, after the calls before it and before the calls after it.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
from dataclasses import dataclass, field

import pytest
from django.apps import apps

from agents.models import Tool as ToolRow
from agents.runtime.builtins import register_builtins
from agents.runtime.registry import ToolContext, ToolRegistry
from agents.runtime.toolset import build_tool_manager
from orkestrel.core import ToolManager, create_agent, create_tool
from orkestrel.core.dispatch import READ_ONLY_REFUSAL
from orkestrel.providers import ScriptedProvider

from .helpers import Reply, tool_context

WORKSPACE_CALLS = {
    "list": {"operation": "list"},
    "read": {"operation": "read", "path": "notes.md"},
    "search": {"operation": "search", "query": "alpha"},
    "write": {"operation": "write", "path": "notes.md", "content": "x"},
    "replace": {"operation": "replace", "query": "alpha", "replacement": "omega"},
    "remove": {"operation": "remove", "path": "notes.md"},
}


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    register_builtins(registry)
    return registry


@pytest.fixture(autouse=True)
def allow_loopback(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]}


def tools(registry: ToolRegistry, *rows: ToolRow, context: ToolContext | None = None):
    """The run's tools for ``rows``, validated as the admin does (minus uniqueness)."""
    for row in rows:
        row.clean_fields()
        row.clean()
    return build_tool_manager(list(rows), context or tool_context(), registry)


async def read_only_turn(manager: ToolManager, name: str, arguments: dict):
    """One call in a read-only agent's turn; the tool message the model then reads."""
    provider = ScriptedProvider(
        script=[{"tools": [{"id": "c1", "name": name, "arguments": arguments}]}, "done"]
    )
    agent = create_agent(provider, tools=manager, read_only=True)
    agent.context.messages.add({"role": "user", "content": "go"})
    await agent.generate()
    return next(m for m in agent.context.messages.messages() if m.role == "tool")


# -- the tool's own ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("safe", "safe_operations"),
    [
        (None, {"list", "read", "search"}),
        (True, set(WORKSPACE_CALLS)),
        (False, set()),
    ],
    ids=["own", "always", "never"],
)
def test_the_workspace_tools_safety_is_per_operation_unless_the_operator_marks_it(
    registry, safe, safe_operations
):
    tool = tools(registry, ToolRow(name="workspace", kind="builtin", safe=safe)).tool("workspace")
    found = {operation for operation, call in WORKSPACE_CALLS.items() if tool.is_safe(call)}
    assert found == safe_operations


def test_an_http_or_command_tools_own_safety_is_a_write(registry, server):
    http = ToolRow(name="items", kind="http", url_template=f"{server.url}/items")
    command = ToolRow(name="lister", kind="command", program="ls")
    manager = tools(registry, http, command)
    assert [tool.is_safe({}) for tool in manager.tools()] == [False, False]


# -- read-only mode ------------------------------------------------------------------------------


@pytest.mark.parametrize(("safe", "runs"), [(None, True), (False, False)], ids=["own", "never"])
async def test_a_builtin_marked_never_safe_is_refused_in_read_only_mode(
    registry, server, safe, runs
):
    server.routes["/page"] = Reply(200, "the page")
    manager = tools(registry, ToolRow(name="http_fetch", kind="builtin", safe=safe))
    message = await read_only_turn(manager, "http_fetch", {"url": f"{server.url}/page"})
    if runs:  # http_fetch's own safety: a GET changes nothing
        assert message.outcome.kind == "value" and "the page" in message.content
        assert server.paths() == ["/page"]
    else:
        assert (message.outcome.kind, message.outcome.reason) == ("denied", READ_ONLY_REFUSAL)
        assert server.seen == []


@pytest.mark.parametrize(("safe", "runs"), [(True, True), (None, False)], ids=["always", "own"])
async def test_an_http_tool_marked_always_safe_runs_in_read_only_mode(registry, server, safe, runs):
    server.routes["/items"] = Reply(200, {"items": ["a"]}, "application/json")
    row = ToolRow(name="items", kind="http", url_template=f"{server.url}/items", safe=safe)
    message = await read_only_turn(tools(registry, row), "items", {})
    if runs:
        assert message.outcome.kind == "value" and '"items": ["a"]' in message.content
        assert server.paths() == ["/items"]
    else:  # an HTTP tool's own safety: a write
        assert (message.outcome.kind, message.outcome.reason) == ("denied", READ_ONLY_REFUSAL)
        assert server.seen == []


# -- order -------------------------------------------------------------------------------------


@dataclass
class Clock:
    """Start/end ticks of every call on one logical clock (no wall time)."""

    ticks: itertools.count[int] = field(default_factory=itertools.count)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)

    def register(self, registry: ToolRegistry, name: str) -> None:
        """A third-party built-in ``name`` that declares itself safe."""

        async def execute(arguments):
            label = arguments["label"]
            start = next(self.ticks)
            # Each step yields to the loop: calls that run concurrently interleave here.
            for _ in range(3):
                await asyncio.sleep(0)
            self.spans[label] = (start, next(self.ticks))
            return label

        registry.register(
            name,
            lambda context: create_tool(name=name, execute=execute, safe=True),
            description="Records when it ran.",
            parameters={"type": "object", "properties": {"label": {"type": "string"}}},
        )

    def overlap(self, one: str, other: str) -> bool:
        (a_start, a_end), (b_start, b_end) = self.spans[one], self.spans[other]
        return a_start < b_end and b_start < a_end

    def before(self, earlier: str, later: str) -> bool:
        return self.spans[earlier][1] < self.spans[later][0]


async def test_a_builtin_marked_never_safe_runs_alone_in_a_mixed_turn(registry):
    clock = Clock()
    clock.register(registry, "look")
    clock.register(registry, "touch")
    rows = [ToolRow(name="look", kind="builtin"), ToolRow(name="touch", kind="builtin", safe=False)]
    calls = [("look", "a"), ("look", "b"), ("touch", "c"), ("look", "d"), ("look", "e")]
    provider = ScriptedProvider(
        script=[
            {
                "tools": [
                    {"id": f"c{index}", "name": name, "arguments": {"label": label}}
                    for index, (name, label) in enumerate(calls)
                ]
            },
            "done",
        ]
    )
    agent = create_agent(provider, tools=tools(registry, *rows))
    agent.context.messages.add({"role": "user", "content": "go"})
    await agent.generate()
    # The safe calls on either side of it overlap; the marked one runs between them, alone.
    assert clock.overlap("a", "b") and clock.overlap("d", "e")
    assert clock.before("a", "c") and clock.before("b", "c")
    assert clock.before("c", "d") and clock.before("c", "e")


# -- the stored rows -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_migration_keeps_what_every_stored_row_meant():
    migration = importlib.import_module("agents.migrations.0011_tool_safety_system")
    marked = ToolRow.objects.create(name="http_fetch", kind="builtin", safe=True)
    unmarked = [
        ToolRow.objects.create(name="workspace", kind="builtin", safe=False),
        ToolRow.objects.create(
            name="items", kind="http", url_template="https://x.example/", safe=False
        ),
        ToolRow.objects.create(name="lister", kind="command", program="ls", safe=False),
    ]
    migration.own_from_unmarked(apps, None)
    # An unticked box was the tool's own safety; a ticked one, always safe.
    assert [row.safe for row in ToolRow.objects.filter(pk__in=[r.pk for r in unmarked])] == [
        None
    ] * 3
    assert ToolRow.objects.get(pk=marked.pk).safe is True
    # Back: never safe, which a box cannot hold, becomes unticked as well.
    ToolRow.objects.filter(name="lister").update(safe=False)
    migration.unmarked_from_own(apps, None)
    assert sorted(ToolRow.objects.values_list("name", "safe")) == [
        ("http_fetch", True),
        ("items", False),
        ("lister", False),
        ("workspace", False),
    ]
