"""The ``workspace`` built-in: every operation over the run's active workspace, and its faults."""

from __future__ import annotations

import asyncio
import base64
import time

import pytest

from agents.runtime.arguments import guard_tool
from agents.runtime.builtins.workspace import (
    DIFF_CHARS,
    LINE_CHARS,
    SEARCH_LIMIT,
    create_workspace_tool,
    is_safe,
)
from orkestrel.core import (
    ToolCall,
    ToolManager,
    create_agent,
    create_binary_content,
    create_file,
    create_memory_workspace_store,
    create_scope,
    create_text_content,
    create_workspace_manager,
)
from orkestrel.protocol import tool_payload
from orkestrel.providers import ScriptedProvider

from .helpers import call, tool_context

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()


@pytest.fixture
def context():
    context = tool_context()
    context.agent_context.workspaces.add(
        id="main",
        seed=[
            create_file("notes.md", create_text_content("alpha\nbeta\ngamma", "markdown")),
            create_file("logo.png", create_binary_content(PNG, "image/png")),
        ],
    )
    return context


@pytest.fixture
def manager(context):
    return ToolManager(guard_tool(create_workspace_tool(context), timeout=5))


def workspace_of(context):
    return context.agent_context.workspaces.active


async def run(manager, **arguments):
    result = await call(manager, "workspace", **arguments)
    assert result.error is None, result.error
    return result.value


async def fault(manager, **arguments) -> str:
    result = await call(manager, "workspace", **arguments)
    assert result.error is not None, result.value
    return result.error


async def test_list_describes_every_file(manager):
    assert await run(manager, operation="list") == [
        {"path": "notes.md", "language": "markdown", "size": 16, "lines": 3, "state": "created"},
        {"path": "logo.png", "mime": "image/png", "size": 16, "lines": 0, "state": "created"},
    ]


async def test_read_returns_the_whole_text(manager):
    assert await run(manager, operation="read", path="notes.md") == {
        "path": "notes.md",
        "content": "alpha\nbeta\ngamma",
    }


async def test_a_ranged_read_returns_the_span_and_the_clamped_range(manager):
    value = await run(
        manager,
        operation="read",
        path="notes.md",
        start_line=2,
        start_column=1,
        end_line=3,
        end_column=99,
    )
    assert value == {
        "path": "notes.md",
        "content": "beta\ngamma",
        "range": {"start": {"line": 2, "column": 1}, "end": {"line": 3, "column": 6}},
    }


async def test_a_partial_range_names_the_missing_ends(manager):
    error = await fault(manager, operation="read", path="notes.md", start_line=1)
    assert error == "TOOL: operation 'read' needs 'start_column', 'end_line', 'end_column'"


async def test_write_creates_a_file_and_rewrites_it(manager, context):
    created = await run(manager, operation="write", path="src/app.py", content="print(1)\n")
    assert created == {
        "path": "src/app.py",
        "language": "python",
        "size": 9,
        "lines": 2,
        "state": "created",
    }
    await run(manager, operation="write", path="src/app.py", content="print(2)")
    assert workspace_of(context).read("src/app.py") == "print(2)"
    assert workspace_of(context).file("src/app.py").state == "modified"


async def test_a_ranged_write_splices_only_that_span(manager, context):
    await run(
        manager,
        operation="write",
        path="notes.md",
        content="BETA",
        start_line=2,
        start_column=1,
        end_line=2,
        end_column=5,
    )
    assert workspace_of(context).read("notes.md") == "alpha\nBETA\ngamma"


async def test_an_inverted_ranged_write_is_a_range_fault(manager, context):
    error = await fault(
        manager,
        operation="write",
        path="notes.md",
        content="x",
        start_line=3,
        start_column=1,
        end_line=1,
        end_column=1,
    )
    assert error.startswith("RANGE: invalid range for 'notes.md'")
    assert workspace_of(context).read("notes.md") == "alpha\nbeta\ngamma"


async def test_prepend_and_append_extend_a_file(manager, context):
    await run(manager, operation="prepend", path="notes.md", content="# Notes\n")
    value = await run(manager, operation="append", path="notes.md", content="\ndelta")
    assert workspace_of(context).read("notes.md") == "# Notes\nalpha\nbeta\ngamma\ndelta"
    assert value["lines"] == 5


async def test_append_creates_an_absent_file(manager, context):
    await run(manager, operation="append", path="log.txt", content="one")
    assert workspace_of(context).read("log.txt") == "one"


async def test_search_lists_matches_with_their_lines(manager):
    # Case-sensitive, as seed 000's search is by default: "A" is in no file.
    assert (await run(manager, operation="search", query="A"))["matches"] == []
    value = await run(manager, operation="search", query="a", regex=None)
    assert value["truncated"] is False
    assert [(m["path"], m["line"], m["column"]) for m in value["matches"]] == [
        ("notes.md", 1, 1),
        ("notes.md", 1, 5),
        ("notes.md", 2, 4),
        ("notes.md", 3, 2),
        ("notes.md", 3, 5),
    ]
    assert value["matches"][2] == {
        "path": "notes.md",
        "line": 2,
        "column": 4,
        "length": 1,
        "content": "beta",
    }


async def test_a_regex_search_matches_a_pattern(manager):
    value = await run(manager, operation="search", query=r"^g\w+$", regex=True)
    assert [m["content"] for m in value["matches"]] == ["gamma"]


async def test_search_results_are_capped(manager, context):
    workspace_of(context).write("many.txt", "x\n" * (SEARCH_LIMIT + 5))
    value = await run(manager, operation="search", query="x")
    assert len(value["matches"]) == SEARCH_LIMIT
    assert value["truncated"] is True


async def test_a_long_matched_line_is_answered_as_the_part_around_each_match(manager, context):
    # One line of a megabyte matched a hundred times was a hundred megabytes of JSON.
    line = "x" * 500_000 + "needle" + "y" * 500_000
    workspace_of(context).write("min.js", line)
    (match,) = (await run(manager, operation="search", query="needle"))["matches"]
    assert (match["line"], match["column"], match["length"]) == (1, 500_001, 6)
    excerpt = match["content"]
    assert len(excerpt) == LINE_CHARS + 2 and excerpt.startswith("…x") and excerpt.endswith("y…")
    assert excerpt.index("needle") == 1 + LINE_CHARS // 4
    value = await run(manager, operation="search", query="y")
    assert len(value["matches"]) == SEARCH_LIMIT and value["truncated"] is True
    assert all(len(match["content"]) <= LINE_CHARS + 2 for match in value["matches"])
    short = await run(manager, operation="search", query="gamma")
    assert short["matches"][0]["content"] == "gamma"


async def test_a_bad_regex_is_a_pattern_fault(manager):
    error = await fault(manager, operation="search", query="(unclosed", regex=True)
    assert error.startswith("PATTERN: invalid pattern '(unclosed'")


# Exponential backtracking: Python's ``re`` held the GIL about 5 s over SUBJECT (issue 30).
CATASTROPHIC = r"(?:a|a)*$"
SUBJECT = "a" * 26 + "!"


async def longest_stall(task: asyncio.Task) -> float:
    """The longest the event loop went without running this coroutine while ``task`` ran."""
    longest, last = 0.0, time.monotonic()
    while not task.done():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    return longest


@pytest.mark.parametrize("operation", ["search", "replace"])
async def test_a_catastrophic_pattern_is_a_timeout_fault_and_the_loop_keeps_serving(
    manager, context, operation
):
    workspace_of(context).write("a.txt", SUBJECT)
    arguments = {"operation": operation, "query": CATASTROPHIC, "regex": True}
    if operation == "replace":
        arguments["replacement"] = "x"
    called = asyncio.create_task(call(manager, "workspace", **arguments))
    # Before the fix the loop stood still for the whole match (about 5 s); the bound leaves
    # room for a CI box whose other test processes take the CPU.
    assert await longest_stall(called) < 0.5
    result = await called
    assert result.error is not None and result.error.startswith(
        f"PATTERN: pattern {CATASTROPHIC!r} took longer than 1 s"
    ), result
    assert workspace_of(context).read("a.txt") == SUBJECT


async def test_replace_rewrites_every_match_and_reports_the_tally(manager, context):
    workspace_of(context).write("other.md", "beta beta")
    value = await run(manager, operation="replace", query="beta", replacement="BETA")
    assert value == {"query": "beta", "replaced": 3, "files": 2}
    assert workspace_of(context).read("other.md") == "BETA BETA"


async def test_move_rekeys_a_file(manager, context):
    assert await run(manager, operation="move", path="notes.md", to="docs/notes.md") == {
        "from": "notes.md",
        "to": "docs/notes.md",
    }
    workspace = workspace_of(context)
    assert not workspace.has("notes.md")
    assert workspace.read("docs/notes.md") == "alpha\nbeta\ngamma"


async def test_moving_an_absent_file_is_a_tool_fault(manager):
    assert await fault(manager, operation="move", path="nope.md", to="x.md") == (
        "TOOL: no file at 'nope.md'"
    )


async def test_remove_drops_a_file(manager, context):
    assert await run(manager, operation="remove", path="notes.md") == {
        "path": "notes.md",
        "removed": True,
    }
    assert not workspace_of(context).has("notes.md")
    assert await fault(manager, operation="remove", path="notes.md") == (
        "TOOL: no file at 'notes.md'"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"operation": "read", "path": "logo.png"},
        {
            "operation": "read",
            "path": "logo.png",
            "start_line": 1,
            "start_column": 1,
            "end_line": 1,
            "end_column": 2,
        },
        {"operation": "append", "path": "logo.png", "content": "text"},
        {
            "operation": "write",
            "path": "logo.png",
            "content": "x",
            "start_line": 1,
            "start_column": 1,
            "end_line": 1,
            "end_column": 1,
        },
    ],
)
async def test_text_operations_on_a_binary_file_are_modality_faults(manager, arguments):
    error = await fault(manager, **arguments)
    assert error.startswith("MODALITY: ")
    assert "logo.png" in error


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"operation": "read"}, "TOOL: operation 'read' needs 'path'"),
        ({"operation": "write", "path": "a.md"}, "TOOL: operation 'write' needs 'content'"),
        ({"operation": "replace", "query": "a"}, "TOOL: operation 'replace' needs 'replacement'"),
        ({"operation": "move", "path": "notes.md"}, "TOOL: operation 'move' needs 'to'"),
        ({"operation": "switch"}, "TOOL: operation 'switch' needs 'workspace'"),
        ({"operation": "read", "path": "absent.md"}, "TOOL: no file at 'absent.md'"),
    ],
)
async def test_missing_arguments_are_tool_faults(manager, arguments, message):
    assert await fault(manager, **arguments) == message


async def test_an_empty_path_is_a_tool_fault(manager):
    error = await fault(manager, operation="write", path="", content="x")
    assert error.startswith("TOOL: path must be a non-empty string")


async def test_an_unknown_operation_is_refused_by_the_schema(manager):
    error = await fault(manager, operation="explode")
    assert error.startswith("invalid arguments at $.operation: 'explode' is not one of")


async def test_switch_activates_another_registered_workspace(manager, context):
    workspaces = context.agent_context.workspaces
    workspaces.add(id="other", seed=[create_file("b.txt", create_text_content("B"))])
    assert await run(manager, operation="switch", workspace="other") == {
        "workspace": "other",
        "files": 1,
    }
    assert workspaces.active.id == "other"
    assert await run(manager, operation="read", path="b.txt") == {"path": "b.txt", "content": "B"}


async def test_switch_hydrates_a_stored_workspace(context):
    store = create_memory_workspace_store()
    await store.set(
        {
            "id": "saved",
            "files": [create_file("kept.txt", create_text_content("from the store")).to_dict()],
        }
    )
    context.agent_context.workspaces = create_workspace_manager(store=store)
    manager = ToolManager(guard_tool(create_workspace_tool(context)))
    assert await run(manager, operation="switch", workspace="saved") == {
        "workspace": "saved",
        "files": 1,
    }
    assert await run(manager, operation="read", path="kept.txt") == {
        "path": "kept.txt",
        "content": "from the store",
    }


async def test_switching_to_an_unknown_workspace_is_a_tool_fault(manager, context):
    error = await fault(manager, operation="switch", workspace="ghost")
    assert error == "TOOL: no workspace 'ghost'; known: ['main']"
    assert context.agent_context.workspaces.active.id == "main"


async def test_without_an_active_workspace_every_edit_is_a_clear_fault():
    context = tool_context()
    manager = ToolManager(guard_tool(create_workspace_tool(context)))
    error = await fault(manager, operation="write", path="a.md", content="x")
    assert error == "TOOL: no active workspace; switch to one first"
    assert context.agent_context.workspaces.count == 0


def test_the_tool_advertises_a_flat_operation_schema_whose_safety_is_per_call(context):
    tool = create_workspace_tool(context)
    assert tool.name == "workspace" and tool.safe is is_safe
    properties = tool.parameters["properties"]
    assert properties["operation"]["enum"] == [
        "list",
        "read",
        "write",
        "prepend",
        "append",
        "search",
        "replace",
        "move",
        "remove",
        "switch",
        "list_workspaces",
    ]
    assert all(spec.get("type") != "object" for spec in properties.values())


# -- safety per operation, and the diff an edit shows --------------------------------------


@pytest.mark.parametrize(
    ("operation", "safe"),
    [
        ("list", True),
        ("read", True),
        ("search", True),
        ("write", False),
        ("prepend", False),
        ("append", False),
        ("replace", False),
        ("move", False),
        ("remove", False),
        ("switch", False),
        ("list_workspaces", True),
        (None, False),
        (["read"], False),
    ],
)
def test_list_read_and_search_are_safe_and_every_other_operation_is_a_write(
    context, operation, safe
):
    tool = guard_tool(create_workspace_tool(context))
    assert tool.is_safe({"operation": operation, "path": "notes.md"}) is safe


async def shown(manager, **arguments):
    """An edit's result: what the model reads (``value``) and the diff the user sees."""
    result = await call(manager, "workspace", **arguments)
    assert result.error is None, result.error
    return result.value, result.display


async def test_a_write_shows_its_unified_diff_and_answers_the_model_as_before(manager):
    value, display = await shown(
        manager,
        operation="write",
        path="notes.md",
        content="BETA",
        start_line=2,
        start_column=1,
        end_line=2,
        end_column=5,
    )
    assert value == {
        "path": "notes.md",
        "language": "markdown",
        "size": 16,
        "lines": 3,
        "state": "modified",
    }
    assert display == (
        "--- a/notes.md\n"
        "+++ b/notes.md\n"
        "@@ -1,3 +1,3 @@\n"
        " alpha\n"
        "-beta\n"
        "+BETA\n"
        " gamma\n"
        "\\ No newline at end of file\n"
    )


async def test_creating_a_file_diffs_from_dev_null(manager):
    _, display = await shown(manager, operation="write", path="new.txt", content="one\ntwo\n")
    assert display == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"


async def test_an_append_diffs_the_last_line_gaining_its_newline(manager):
    _, display = await shown(manager, operation="append", path="notes.md", content="\ndelta\n")
    assert display == (
        "--- a/notes.md\n"
        "+++ b/notes.md\n"
        "@@ -1,3 +1,4 @@\n"
        " alpha\n"
        " beta\n"
        "-gamma\n"
        "\\ No newline at end of file\n"
        "+gamma\n"
        "+delta\n"
    )


async def test_replace_shows_the_diff_of_every_changed_file_only(manager, context):
    workspace_of(context).write("other.md", "beta beta\n")
    workspace_of(context).write("untouched.md", "alpha\n")
    value, display = await shown(manager, operation="replace", query="beta", replacement="B")
    assert value == {"query": "beta", "replaced": 3, "files": 2}
    assert display == (
        "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+B\n gamma\n"
        "\\ No newline at end of file\n"
        "--- a/other.md\n+++ b/other.md\n@@ -1 +1 @@\n-beta beta\n+B B\n"
    )


async def test_an_edit_too_large_to_diff_is_named_on_the_card(manager, context):
    # difflib is pure Python on the run's loop: a megabyte took about 0.2 s, per file.
    lines = DIFF_CHARS // 10
    workspace_of(context).write("big.txt", "old line\n" * lines)
    value, display = await shown(
        manager, operation="write", path="big.txt", content="new line\n" * lines
    )
    assert value["path"] == "big.txt"
    assert display == (
        f"--- a/big.txt\n+++ b/big.txt\n(too large to show: {lines} lines before, {lines} after)\n"
    )


async def test_a_replace_diffs_files_until_the_budget_is_spent_then_names_them(manager, context):
    # Each file's two sides are three quarters of the budget: the first fits, the second not.
    lines = DIFF_CHARS * 3 // 4 // len("old\nnew\n")
    workspace_of(context).write({"a.txt": "old\n" * lines, "b.txt": "old\n" * lines})
    value, display = await shown(manager, operation="replace", query="old", replacement="new")
    assert value == {"query": "old", "replaced": 2 * lines, "files": 2}
    first, second = display.split("--- a/b.txt\n")
    assert first.startswith("--- a/a.txt\n+++ b/a.txt\n@@ ") and first.count("\n-old") == lines
    assert second == f"+++ b/b.txt\n(too large to show: {lines} lines before, {lines} after)\n"


async def test_remove_diffs_to_dev_null_and_a_binary_file_is_named_not_diffed(manager):
    _, display = await shown(manager, operation="remove", path="notes.md")
    assert display.startswith("--- a/notes.md\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-alpha\n")
    _, display = await shown(manager, operation="remove", path="logo.png")
    assert display == "Binary files a/logo.png and /dev/null differ\n"


async def test_a_move_shows_a_rename_and_an_overwrite_shows_what_the_target_lost(manager, context):
    _, display = await shown(manager, operation="move", path="notes.md", to="docs/notes.md")
    assert display == "--- a/notes.md\n+++ b/docs/notes.md\n"
    workspace_of(context).write("a.txt", "new\n")
    workspace_of(context).write("b.txt", "old\n")
    _, display = await shown(manager, operation="move", path="a.txt", to="b.txt")
    assert display == (
        "--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-new\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-old\n+new\n"
    )


async def test_reads_and_edits_that_change_nothing_show_nothing(manager):
    assert (await shown(manager, operation="read", path="notes.md"))[1] is None
    assert (await shown(manager, operation="list"))[1] is None
    value, display = await shown(manager, operation="replace", query="zzz", replacement="y")
    assert (value["replaced"], display) == (0, None)
    same = "alpha\nbeta\ngamma"
    assert (await shown(manager, operation="write", path="notes.md", content=same))[1] is None


async def test_an_edits_diff_rides_the_tool_payload_and_a_reads_is_none(manager):
    arguments = {"operation": "write", "path": "new.txt", "content": "x\n"}
    result = await call(manager, "workspace", **arguments)
    payload = tool_payload(ToolCall("call-1", "workspace", arguments), result)
    assert payload["display"] == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"
    assert payload["result"] == {"value": result.value}
    read = await call(manager, "workspace", operation="read", path="new.txt")
    assert tool_payload(ToolCall("call-2", "workspace", {}), read)["display"] is None


async def test_in_read_only_mode_the_agent_reads_the_workspace_and_edits_are_refused(context):
    provider = ScriptedProvider(
        script=[
            {
                "tools": [
                    {
                        "id": "r",
                        "name": "workspace",
                        "arguments": {"operation": "read", "path": "notes.md"},
                    },
                    {
                        "id": "w",
                        "name": "workspace",
                        "arguments": {"operation": "write", "path": "notes.md", "content": "gone"},
                    },
                ]
            },
            {"content": "done"},
        ]
    )
    tools = ToolManager(guard_tool(create_workspace_tool(context), timeout=5))
    agent = create_agent(provider, context=context.agent_context, read_only=True)
    agent.context.tools.add(tools.tools())
    agent.context.messages.add({"role": "user", "content": "edit my notes"})
    await agent.generate()
    read, write = [m for m in agent.context.messages.messages() if m.role == "tool"]
    assert read.outcome.kind == "value" and "alpha" in read.content
    assert write.outcome.kind == "denied"
    assert write.outcome.reason == "write access is off for this conversation"
    assert workspace_of(context).read("notes.md") == "alpha\nbeta\ngamma"


@pytest.fixture
def scoped(context):
    """The workspace with a second note, under a scope that shows only ``notes.md``."""
    workspace = context.agent_context.workspaces.workspace("main")
    workspace.write("secret.md", "alpha secret")
    context.agent_context.scope = create_scope(name="notes only", files=["notes.md"])
    return ToolManager(guard_tool(create_workspace_tool(context), timeout=5)), workspace


async def test_a_scope_hides_its_files_from_list_read_and_search(scoped):
    manager, _ = scoped
    assert [entry["path"] for entry in await run(manager, operation="list")] == ["notes.md"]
    assert "no file at 'secret.md'" in await fault(manager, operation="read", path="secret.md")
    found = await run(manager, operation="search", query="alpha")
    assert [match["path"] for match in found["matches"]] == ["notes.md"]


async def test_a_scope_keeps_writes_and_replaces_off_its_hidden_files(scoped):
    manager, workspace = scoped
    refused = await fault(manager, operation="write", path="secret.md", content="mine")
    assert "no file at 'secret.md'" in refused
    moved = await fault(manager, operation="move", path="notes.md", to="secret.md")
    assert "no file at 'secret.md'" in moved
    tally = await run(manager, operation="replace", query="alpha", replacement="omega")
    assert tally["replaced"] == 1 and tally["files"] == 1
    assert workspace.read("secret.md") == "alpha secret"
    assert workspace.read("notes.md").startswith("omega")
