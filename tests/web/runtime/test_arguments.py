"""The tool guard: schema violations never reach a handler; the row's timeout bounds a call."""

from __future__ import annotations

import asyncio

import pytest
from jsonschema import SchemaError

from agents.runtime.arguments import format_seconds, guard_tool
from orkestrel.core import ToolManager, create_tool

from .helpers import call

SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "string"}},
        "inner": {
            "type": "object",
            "properties": {"depth": {"type": "integer", "minimum": 1}},
        },
    },
    "required": ["a"],
}


def recording_tool(seen: list[dict]) -> object:
    async def execute(arguments):
        seen.append(dict(arguments))
        return {"sum": arguments["a"] + 1}

    return create_tool(
        name="adder", execute=execute, description="Adds.", parameters=SCHEMA, safe=True
    )


async def test_valid_arguments_reach_the_handler_and_its_value_returns():
    seen: list[dict] = []
    manager = ToolManager(guard_tool(recording_tool(seen), timeout=5))
    result = await call(manager, "adder", a=41)
    assert (result.value, result.error) == ({"sum": 42}, None)
    assert seen == [{"a": 41}]


async def test_a_missing_required_argument_is_an_error_and_never_reaches_the_handler():
    seen: list[dict] = []
    manager = ToolManager(guard_tool(recording_tool(seen)))
    result = await call(manager, "adder", items=["x"])
    assert result.error == "invalid arguments: 'a' is a required property"
    assert seen == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"a": 1, "items": ["ok", 5]},
            "invalid arguments at $.items[1]: 5 is not of type 'string'",
        ),
        ({"a": 1, "inner": {"depth": 0}}, "invalid arguments at $.inner.depth: 0 is less than"),
        ({"a": "one"}, "invalid arguments at $.a: 'one' is not of type 'integer'"),
    ],
)
async def test_a_nested_violation_names_its_json_path(arguments, message):
    seen: list[dict] = []
    manager = ToolManager(guard_tool(recording_tool(seen)))
    result = await call(manager, "adder", **arguments)
    assert result.error.startswith(message)
    assert seen == []


async def test_the_guarded_tool_keeps_the_advertised_metadata():
    original = recording_tool([])
    guarded = guard_tool(original, timeout=1)
    assert (guarded.name, guarded.description, guarded.parameters, guarded.safe) == (
        "adder",
        "Adds.",
        SCHEMA,
        True,
    )
    assert guarded.execute is not original.execute


async def test_a_call_past_its_timeout_is_an_error_naming_the_limit():
    started = asyncio.Event()

    async def stall(arguments):
        started.set()
        await asyncio.Event().wait()

    manager = ToolManager(guard_tool(create_tool(name="stall", execute=stall), timeout=0.05))
    result = await call(manager, "stall")
    assert started.is_set()
    assert result.error == "timed out after 0.05s"


async def test_a_handlers_own_timeout_error_is_reported_as_its_own():
    async def upstream(arguments):
        raise TimeoutError("upstream took too long")

    manager = ToolManager(guard_tool(create_tool(name="up", execute=upstream), timeout=30))
    result = await call(manager, "up")
    assert result.error == "upstream took too long"


async def test_a_tool_without_a_schema_takes_any_arguments():
    async def echo(arguments):
        return dict(arguments)

    manager = ToolManager(guard_tool(create_tool(name="echo", execute=echo)))
    assert (await call(manager, "echo", anything=[1, {"x": None}])).value == {
        "anything": [1, {"x": None}]
    }


def test_an_invalid_schema_is_refused_when_the_tool_is_guarded():
    tool = create_tool(name="bad", execute=lambda: None, parameters={"type": "nonsense"})
    with pytest.raises(SchemaError):
        guard_tool(tool)


def test_a_non_positive_timeout_is_refused():
    with pytest.raises(ValueError, match="timeout"):
        guard_tool(create_tool(name="t", execute=lambda: None), timeout=0)


def test_seconds_format_without_trailing_zeros():
    assert [format_seconds(s) for s in (30.0, 0.25, 120)] == ["30s", "0.25s", "120s"]
