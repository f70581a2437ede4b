"""The kit's Agent completes a tool-using run through each real provider, over loopback HTTP."""

from __future__ import annotations

import json

import pytest

from orkestrel.core import create_agent, create_tool, create_tool_manager

from .server import StubServer
from .test_http import PROTOCOLS, Protocol, build
from .turns import reply


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=[p.name for p in PROTOCOLS])
async def test_agent_runs_a_tool_turn_then_answers_through_the_provider(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(
        reply(protocol.name, ["Let me add."], calls=[("c1", "add", {"a": 2, "b": 3})]),
        reply(protocol.name, ["The sum is ", "5."]),
    )
    ran: list[dict] = []

    def add(arguments):
        ran.append(dict(arguments))
        return arguments["a"] + arguments["b"]

    tools = create_tool_manager()
    tools.add(
        create_tool(
            name="add",
            description="Add two numbers",
            parameters={"type": "object", "properties": {"a": {"type": "number"}}},
            execute=add,
        )
    )
    agent = create_agent(build(protocol, stub), system="Be brief.", tools=tools)
    agent.context.messages.add({"role": "user", "content": "What is 2 + 3?"})
    stream = agent.stream()
    chunks = [chunk async for chunk in stream.events]
    result = await stream.result

    assert result.content == "The sum is 5." and result.partial is False
    assert ran == [{"a": 2, "b": 3}]
    tool = next(chunk for chunk in chunks if chunk.type == "tool")
    assert tool.result.value == 5
    assert result.usage is not None and result.usage.total > 0
    # The second request carried the call and its result back in the wire's own shape.
    second = json.loads(stub.requests[1].body)
    text = json.dumps(second)
    assert "add" in text and "5" in text
    if protocol.name != "ollama":  # Ollama's wire has no tool-call ids
        assert "c1" in text
    first = json.loads(stub.requests[0].body)
    assert "Add two numbers" in json.dumps(first)
    assert stub.pending == 0
