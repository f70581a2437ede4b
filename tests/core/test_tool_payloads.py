"""Tool payloads: ``{result, system}`` and ``{result, display}``, and the dicts that are not."""

from __future__ import annotations

import json

import pytest

from orkestrel.core import ToolCall, ToolResult, create_agent, create_tool, create_tool_manager
from orkestrel.core.tools import read_payload
from orkestrel.providers import ScriptedProvider

DIFF = "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-old\n+new\n"


def returning(**values):
    """A manager whose tool ``name`` returns ``values[name]``."""
    return create_tool_manager(
        [
            create_tool(name=name, execute=lambda arguments, value=value: value)
            for name, value in values.items()
        ]
    )


async def run(tools, *names):
    calls = [{"id": f"c{i}", "name": name, "arguments": {}} for i, name in enumerate(names)]
    provider = ScriptedProvider(script=[{"tools": calls}, {"content": "done"}])
    agent = create_agent(provider, tools=tools)
    agent.context.messages.add({"role": "user", "content": "go"})
    stream = agent.stream()
    chunks = [chunk async for chunk in stream.events]
    await stream.result
    return agent, provider, [chunk for chunk in chunks if chunk.type == "tool"]


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ({"result": 1, "system": "note"}, (1, ("note",), None)),
        ({"result": 1, "system": ["a", "", "b"]}, (1, ("a", "b"), None)),
        ({"result": 1, "system": ("a",)}, (1, ("a",), None)),
        ({"result": 1, "system": None}, (1, None, None)),
        ({"result": 1, "system": ""}, (1, None, None)),
        ({"result": {"ok": True}, "display": DIFF}, ({"ok": True}, None, DIFF)),
        ({"result": None, "display": {"rows": [1]}}, (None, None, {"rows": [1]})),
        ({"result": 1, "system": "s", "display": "d"}, (1, ("s",), "d")),
    ],
)
def test_a_payload_is_a_dict_of_exactly_result_with_system_or_display(value, read):
    assert read_payload(value) == read


@pytest.mark.parametrize(
    "value",
    [
        {"result": 1},
        {"result": 1, "other": 2},
        {"result": 1, "system": "s", "extra": 0},
        {"system": "s", "display": "d"},
        {"result": 1, "system": 5},
        {"result": 1, "system": ["a", 2]},
        [("result", 1), ("system", "s")],
        "result",
        None,
    ],
)
def test_any_other_value_is_an_ordinary_result(value):
    assert read_payload(value) is None


async def test_ordinary_dicts_reach_the_model_whole():
    ordinary = {"result": 1, "system": 5}
    agent, provider, chunks = await run(returning(plain=ordinary), "plain")
    [chunk] = chunks
    assert (chunk.result.value, chunk.result.display, chunk.result.system) == (ordinary, None, None)
    assert json.loads(provider.calls[1].messages[-1].content) == ordinary


async def test_a_system_payload_answers_briefly_and_appends_system_messages_after_the_batch():
    tools = returning(
        save={"result": "saved", "system": "The file is saved; tell the user."},
        count={"result": 2, "system": ["Two found.", "Stop searching."]},
        plain="plain",
    )
    agent, provider, chunks = await run(tools, "save", "count", "plain")
    stored = [(m.role, m.content) for m in agent.context.messages.messages()]
    assert stored == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", '"saved"'),
        ("tool", "2"),
        ("tool", '"plain"'),
        ("system", "The file is saved; tell the user."),
        ("system", "Two found."),
        ("system", "Stop searching."),
        ("assistant", "done"),
    ]
    # The next request sees the same order: every tool message, then the system texts.
    sent = [(m.role, m.content) for m in provider.calls[1].messages]
    assert sent == stored[:-1]
    assert [chunk.result.value for chunk in chunks] == ["saved", 2, "plain"]
    assert chunks[1].result.system == ("Two found.", "Stop searching.")


async def test_a_display_payload_reaches_the_tool_chunk_and_never_the_model():
    tools = returning(edit={"result": {"path": "notes.md"}, "display": DIFF})
    agent, provider, chunks = await run(tools, "edit")
    [chunk] = chunks
    assert chunk.result.value == {"path": "notes.md"}
    assert chunk.result.display == DIFF
    [tool_message] = [m for m in agent.context.messages.messages() if m.role == "tool"]
    assert json.loads(tool_message.content) == {"path": "notes.md"}
    assert all("+new" not in m.content for call in provider.calls for m in call.messages)


async def test_the_tool_manager_reads_payloads_itself():
    tools = returning(edit={"result": "ok", "system": "s", "display": "d"})
    result = await tools.execute(ToolCall("1", "edit", {}))
    assert result == ToolResult("1", "edit", value="ok", display="d", system=("s",))
    assert result.to_dict() == {
        "id": "1",
        "name": "edit",
        "value": "ok",
        "display": "d",
        "system": ["s"],
    }


async def test_a_failed_call_has_no_payload_fields():
    def boom(arguments):
        raise RuntimeError("kaput")

    tools = create_tool_manager([create_tool(name="boom", execute=boom)])
    result = await tools.execute(ToolCall("1", "boom", {}))
    assert (result.error, result.display, result.system) == ("kaput", None, None)
    assert result.to_dict() == {"id": "1", "name": "boom", "error": "kaput"}
