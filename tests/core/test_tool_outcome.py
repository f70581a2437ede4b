"""A tool call's outcome as data: from the kit's dispatch to the tool message in history."""

from orkestrel.core import (
    Message,
    ToolOutcome,
    ToolResult,
    create_agent,
    create_authority,
    create_message,
    create_tool,
    create_tool_manager,
    is_message,
)
from orkestrel.providers import ScriptedProvider


def tools():
    def add(args):
        return args["a"] + args["b"]

    def boom(args):
        raise RuntimeError("it broke")

    manager = create_tool_manager()
    manager.add([create_tool(name="add", execute=add), create_tool(name="boom", execute=boom)])
    return manager


async def test_each_tool_message_carries_the_outcome_of_its_call():
    authority = create_authority(
        rules=[
            {
                "match": lambda c: c.call.arguments.get("a") == 9,
                "zone": "z",
                "allowed": False,
                "reason": "nine is out",
            }
        ]
    )
    provider = ScriptedProvider(
        script=[
            {
                "content": "",
                "tools": [
                    {"id": "1", "name": "add", "arguments": {"a": 1, "b": 1}},
                    {"id": "2", "name": "add", "arguments": {"a": 9, "b": 1}},
                    {"id": "3", "name": "boom", "arguments": {"a": 0, "b": 0}},
                ],
            },
            {"content": "ok"},
        ]
    )
    agent = create_agent(provider, tools=tools(), authority=authority)
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream()
    chunks = [c async for c in stream.events]
    await stream.result
    results = {c.call.id: c.result for c in chunks if c.type == "tool"}
    assert results["1"].outcome == ToolOutcome("value")
    assert results["2"].outcome == ToolOutcome("denied", "nine is out", 0)
    assert results["3"].outcome.kind == "error"
    # The model still reads the seed's text; the history keeps the outcome beside it.
    history = agent.context.messages.messages()
    outcomes = {m.tool_call_id: m.outcome for m in history if m.role == "tool"}
    assert outcomes == {
        "1": ToolOutcome("value"),
        "2": ToolOutcome("denied", "nine is out", 0),
        "3": ToolOutcome("error"),
    }
    sent = [m for m in provider.calls[1].messages if m.role == "tool"]
    assert sent[1].content == '"denied: nine is out"'


def test_a_cancelled_result_says_so_without_its_text_being_read():
    assert ToolResult("c", "t", error="anything", cancelled=True).outcome.kind == "cancelled"
    assert ToolResult("c", "t", error="denied: looks like a denial").outcome.kind == "error"


def test_an_outcome_round_trips_through_the_message_dict_and_the_guard():
    message = Message("m", "tool", '"x"', tool_call_id="c", outcome=ToolOutcome("denied", "no"))
    data = message.to_dict()
    assert data["outcome"] == {"kind": "denied", "reason": "no"}
    assert create_message(data) == message and is_message(data)
    assert not is_message({**data, "outcome": {"kind": "maybe"}})
    assert not is_message({**data, "outcome": {"kind": "denied", "rule": "first"}})
