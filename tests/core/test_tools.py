"""Tool and ToolManager: registry, definitions, per-call isolation, MCP result shape."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Mapping
from typing import Any

import pytest

from orkestrel.core import (
    Tool,
    ToolCall,
    ToolDefinition,
    ToolManager,
    ToolResult,
    build_tool_result,
    create_tool,
    create_tool_manager,
)


def add(args: Mapping[str, Any]) -> int:
    return int(args["a"]) + int(args["b"])


async def slow_echo(args: Mapping[str, Any]) -> Any:
    await asyncio.sleep(0)
    return args["x"]


def boom(args: Mapping[str, Any]) -> None:
    raise ValueError("kaput")


async def async_boom(args: Mapping[str, Any]) -> None:
    await asyncio.sleep(0)
    raise RuntimeError("async kaput")


# --- Tool -----------------------------------------------------------------------------------


async def test_tool_runs_a_sync_handler_and_returns_its_value() -> None:
    tool = create_tool(name="add", execute=add)
    assert await tool.run({"a": 2, "b": 3}) == 5


async def test_tool_runs_an_async_handler_and_returns_its_value() -> None:
    tool = create_tool(name="echo", execute=slow_echo)
    assert await tool.run({"x": "hi"}) == "hi"


async def test_tool_forwards_the_exact_arguments_object_to_the_handler() -> None:
    seen: list[Mapping[str, Any]] = []
    tool = create_tool(name="spy", execute=lambda args: seen.append(args))
    arguments = {"a": 1, "nested": {"b": [2]}}
    await tool.run(arguments)
    assert seen == [arguments]
    assert seen[0] is arguments


async def test_tool_awaits_an_awaitable_returned_by_a_sync_callable() -> None:
    tool = create_tool(name="wrapped", execute=lambda args: slow_echo(args))
    assert await tool.run({"x": 7}) == 7


async def test_tool_calls_a_zero_argument_handler_without_arguments() -> None:
    tool = create_tool(name="now", execute=lambda: 42)
    assert await tool.run({"ignored": True}) == 42


async def test_a_handler_is_given_the_arguments_when_its_signature_takes_them() -> None:
    def no_arguments() -> str:
        return "none"

    def star(*args: Any) -> int:
        return len(args)

    def keyword_only(*, arguments: Any = None) -> str:
        return "keyword"

    @functools.wraps(no_arguments)
    def decorated(*args: Any) -> int:
        return len(args)

    async def bound_free() -> str:
        return "async"

    call = {"x": 1}
    assert await create_tool(name="a", execute=no_arguments).run(call) == "none"
    assert await create_tool(name="b", execute=star).run(call) == 1
    assert await create_tool(name="c", execute=keyword_only).run(call) == "keyword"
    # ``functools.wraps`` sets ``__wrapped__``: the signature read is the wrapped one's.
    assert await create_tool(name="d", execute=decorated).run(call) == 0
    assert await create_tool(name="e", execute=bound_free).run(call) == "async"


def test_tool_exposes_definition_fields_and_omitted_optionals_are_none() -> None:
    parameters = {"type": "object", "properties": {"a": {"type": "number"}}}
    full = create_tool(name="add", execute=add, description="Add", parameters=parameters)
    assert (full.name, full.description, full.parameters) == ("add", "Add", parameters)
    assert full.parameters is parameters
    bare = create_tool(name="now", execute=lambda: 1)
    assert bare.description is None
    assert bare.summary is None
    assert bare.parameters is None
    assert bare.safe is False


def test_tool_is_frozen() -> None:
    tool = create_tool(name="add", execute=add)
    with pytest.raises(AttributeError):
        tool.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "", "execute": add}, "name"),
        ({"name": 3, "execute": add}, "name"),
        ({"name": "x", "execute": "nope"}, "execute"),
        ({"name": "x", "execute": add, "description": 1}, "description"),
        ({"name": "x", "execute": add, "summary": 1}, "summary"),
        ({"name": "x", "execute": add, "parameters": "{}"}, "parameters"),
        ({"name": "x", "execute": add, "safe": "yes"}, "safe"),
    ],
)
def test_create_tool_rejects_bad_fields_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        create_tool(**fields)


# --- ToolManager registry -------------------------------------------------------------------


def test_add_one_and_a_batch_counts_and_lists_in_insertion_order() -> None:
    tools = create_tool_manager()
    assert tools.count == 0
    a = create_tool(name="a", execute=add)
    tools.add(a)
    tools.add([create_tool(name="b", execute=add), create_tool(name="c", execute=add)])
    assert tools.count == 3
    assert [tool.name for tool in tools.tools()] == ["a", "b", "c"]
    assert tools.tool("a") is a
    assert tools.tool("missing") is None


def test_re_add_overwrites_last_write_wins_keeping_its_original_position() -> None:
    tools = create_tool_manager()
    tools.add([create_tool(name="a", execute=add), create_tool(name="b", execute=add)])
    replacement = create_tool(name="a", execute=boom, description="new")
    tools.add(replacement)
    assert tools.count == 2
    assert tools.tool("a") is replacement
    assert [tool.name for tool in tools.tools()] == ["a", "b"]


def test_add_accepts_a_mapping() -> None:
    tools = ToolManager()
    tools.add({"name": "add", "execute": add, "safe": True})
    registered = tools.tool("add")
    assert registered is not None
    assert registered.safe is True


def test_add_batch_with_a_bad_item_leaves_the_registry_untouched() -> None:
    tools = create_tool_manager()
    with pytest.raises(TypeError):
        tools.add([create_tool(name="ok", execute=add), {"name": "", "execute": add}])
    assert tools.count == 0


def test_definitions_strip_the_handler_and_omit_unset_fields() -> None:
    parameters = {"type": "object"}
    tools = create_tool_manager(
        [
            create_tool(name="add", execute=add, description="Add two", parameters=parameters),
            create_tool(name="now", execute=lambda: 1),
        ]
    )
    definitions = tools.definitions()
    assert definitions == (
        ToolDefinition("add", "Add two", parameters),
        ToolDefinition("now", None, None),
    )
    assert all(not hasattr(definition, "execute") for definition in definitions)
    assert definitions[1].to_dict() == {"name": "now"}


def test_definitions_advertise_summary_in_place_of_description() -> None:
    tools = create_tool_manager(
        create_tool(name="search", execute=add, description="Long text", summary="Search")
    )
    assert tools.definitions()[0].description == "Search"
    assert tools.tool("search").description == "Long text"  # type: ignore[union-attr]


def test_definitions_follow_registry_changes() -> None:
    tools = create_tool_manager(create_tool(name="a", execute=add))
    assert [d.name for d in tools.definitions()] == ["a"]
    tools.add(create_tool(name="b", execute=add))
    assert [d.name for d in tools.definitions()] == ["a", "b"]
    tools.remove("a")
    assert [d.name for d in tools.definitions()] == ["b"]
    tools.clear()
    assert tools.definitions() == ()


def test_remove_one_and_a_batch_reports_whether_any_was_removed() -> None:
    tools = create_tool_manager(
        [create_tool(name=name, execute=add) for name in ("a", "b", "c", "d")]
    )
    assert tools.remove("a") is True
    assert tools.remove("a") is False
    assert tools.remove(["b", "ghost"]) is True
    assert tools.remove(["ghost", "phantom"]) is False
    assert [tool.name for tool in tools.tools()] == ["c", "d"]


def test_clear_empties_the_registry() -> None:
    tools = create_tool_manager([create_tool(name="a", execute=add)])
    tools.clear()
    assert tools.count == 0
    assert tools.tools() == ()


# --- ToolManager.execute isolation ----------------------------------------------------------


@pytest.fixture
def tools() -> ToolManager:
    return create_tool_manager(
        [
            create_tool(name="add", execute=add),
            create_tool(name="echo", execute=slow_echo),
            create_tool(name="boom", execute=boom),
            create_tool(name="async_boom", execute=async_boom),
        ]
    )


async def test_execute_success_resolves_the_value(tools: ToolManager) -> None:
    result = await tools.execute(ToolCall("1", "add", {"a": 2, "b": 3}))
    assert result == ToolResult("1", "add", value=5)
    assert result.error is None


async def test_execute_sync_throw_becomes_an_error_result(tools: ToolManager) -> None:
    result = await tools.execute(ToolCall("1", "boom", {}))
    assert result == ToolResult("1", "boom", error="kaput")


async def test_execute_async_throw_becomes_an_error_result(tools: ToolManager) -> None:
    result = await tools.execute(ToolCall("1", "async_boom", {}))
    assert result == ToolResult("1", "async_boom", error="async kaput")


async def test_execute_message_less_exception_reports_its_class_name() -> None:
    def fail(args: Mapping[str, Any]) -> None:
        raise KeyError

    tools = create_tool_manager(create_tool(name="fail", execute=fail))
    result = await tools.execute(ToolCall("1", "fail", {}))
    assert result.error == "KeyError"


async def test_execute_unknown_name_resolves_a_not_found_error(tools: ToolManager) -> None:
    result = await tools.execute({"id": "2", "name": "ghost", "arguments": {}})
    assert result == ToolResult("2", "ghost", error="tool not found: ghost")


async def test_execute_isolates_non_mapping_arguments(tools: ToolManager) -> None:
    called: list[object] = []
    tools.add(create_tool(name="spy", execute=lambda args: called.append(args)))
    result = await tools.execute(ToolCall("1", "spy", '{"not": json'))  # type: ignore[arg-type]
    assert result.error == "invalid arguments for spy: expected a JSON object"
    assert called == []


async def test_execute_isolates_a_malformed_mapping_call(tools: ToolManager) -> None:
    result = await tools.execute({"id": 5, "name": "add", "arguments": {}})
    assert result.error is not None
    assert result.id == ""


async def test_execute_batch_correlates_mixed_outcomes_by_id_in_order(tools: ToolManager) -> None:
    results = await tools.execute(
        [
            ToolCall("1", "add", {"a": 2, "b": 3}),
            ToolCall("2", "ghost", {}),
            ToolCall("3", "boom", {}),
            ToolCall("4", "echo", {"x": "hi"}),
            ToolCall("5", "async_boom", {}),
        ]
    )
    assert results == [
        ToolResult("1", "add", value=5),
        ToolResult("2", "ghost", error="tool not found: ghost"),
        ToolResult("3", "boom", error="kaput"),
        ToolResult("4", "echo", value="hi"),
        ToolResult("5", "async_boom", error="async kaput"),
    ]


async def test_execute_empty_batch_resolves_an_empty_list(tools: ToolManager) -> None:
    assert await tools.execute([]) == []


async def test_execute_single_item_batch_returns_a_list(tools: ToolManager) -> None:
    assert await tools.execute([ToolCall("1", "add", {"a": 1, "b": 1})]) == [
        ToolResult("1", "add", value=2)
    ]


async def test_execute_batch_runs_calls_concurrently() -> None:
    first_started = asyncio.Event()
    second_started = asyncio.Event()

    async def first(args: Mapping[str, Any]) -> str:
        first_started.set()
        await second_started.wait()
        return "first"

    async def second(args: Mapping[str, Any]) -> str:
        await first_started.wait()
        second_started.set()
        return "second"

    tools = create_tool_manager(
        [create_tool(name="first", execute=first), create_tool(name="second", execute=second)]
    )
    results = await asyncio.wait_for(
        tools.execute([ToolCall("1", "first", {}), ToolCall("2", "second", {})]), timeout=5
    )
    assert [result.value for result in results] == ["first", "second"]


async def test_execute_propagates_cancellation_instead_of_swallowing_it() -> None:
    started = asyncio.Event()
    finished: list[str] = []

    async def wait_forever(args: Mapping[str, Any]) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            finished.append("cleanup")

    tools = create_tool_manager(create_tool(name="wait", execute=wait_forever))
    task = asyncio.create_task(tools.execute(ToolCall("1", "wait", {})))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == ["cleanup"]


async def test_execute_batch_cancellation_cancels_every_running_handler() -> None:
    started = 0
    all_started = asyncio.Event()
    cancelled: list[str] = []

    async def wait_forever(args: Mapping[str, Any]) -> None:
        nonlocal started
        started += 1
        if started == 2:
            all_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(str(args["n"]))
            raise

    tools = create_tool_manager(create_tool(name="wait", execute=wait_forever))
    task = asyncio.create_task(
        tools.execute([ToolCall("1", "wait", {"n": 1}), ToolCall("2", "wait", {"n": 2})])
    )
    await all_started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["1", "2"]


async def test_execute_rejects_a_non_call_input() -> None:
    tools = create_tool_manager()
    with pytest.raises(TypeError, match="calls"):
        await tools.execute(42)  # type: ignore[call-overload]


async def test_round_trip_add_list_and_execute_to_a_tool_result() -> None:
    tools = create_tool_manager()
    tools.add(create_tool(name="add", execute=add, description="Add two numbers"))
    assert tools.definitions() == (ToolDefinition("add", "Add two numbers"),)
    assert await tools.execute(ToolCall("9", "add", {"a": 4, "b": 5})) == ToolResult(
        "9", "add", value=9
    )


# --- build_tool_result ----------------------------------------------------------------------


def test_build_tool_result_success_is_json_text_without_is_error() -> None:
    built = build_tool_result(ToolResult("1", "add", value={"sum": 5, "note": "café"}))
    assert built == {"content": [{"type": "text", "text": '{"sum": 5, "note": "café"}'}]}
    assert "isError" not in built
    assert json.loads(built["content"][0]["text"]) == {"sum": 5, "note": "café"}


def test_build_tool_result_string_value_is_json_encoded() -> None:
    assert build_tool_result(ToolResult("1", "x", value="hi"))["content"][0]["text"] == '"hi"'


def test_build_tool_result_error_sets_is_error_true_with_the_message() -> None:
    built = build_tool_result(ToolResult("1", "ghost", error="tool not found: ghost"))
    assert built == {
        "content": [{"type": "text", "text": "tool not found: ghost"}],
        "isError": True,
    }


def test_build_tool_result_accepts_a_mapping_and_survives_unencodable_values() -> None:
    built = build_tool_result({"id": "1", "name": "x", "value": [1, 2]})
    assert built == {"content": [{"type": "text", "text": "[1, 2]"}]}
    failed = build_tool_result({"id": "1", "name": "x", "error": "nope"})
    assert failed["isError"] is True
    odd = build_tool_result(ToolResult("1", "x", value=object()))
    assert odd["content"][0]["text"].startswith('"<object object')


def test_tool_is_exported_as_a_class() -> None:
    assert isinstance(create_tool(name="a", execute=add), Tool)
