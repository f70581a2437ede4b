"""How a turn's tool calls execute: reads together, writes alone and in order, read-only mode."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field

import pytest

from orkestrel.core import (
    ToolCall,
    ToolOutcome,
    create_agent,
    create_authority,
    create_tool,
    create_tool_manager,
)
from orkestrel.providers import ScriptedProvider

REFUSAL = "write access is off for this conversation"


@dataclass
class Clock:
    """Start/end timestamps of every call, on one logical clock (no wall time, no flakes)."""

    ticks: itertools.count[int] = field(default_factory=itertools.count)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)

    def tool(self, name: str, safe, steps: int = 3):
        async def execute(arguments):
            label = arguments["label"]
            start = next(self.ticks)
            # Each step yields to the loop: calls that run concurrently interleave here.
            for _ in range(arguments.get("steps", steps)):
                await asyncio.sleep(0)
            self.spans[label] = (start, next(self.ticks))
            return label

        return create_tool(name=name, execute=execute, safe=safe)

    def overlap(self, one: str, other: str) -> bool:
        (a_start, a_end), (b_start, b_end) = self.spans[one], self.spans[other]
        return a_start < b_end and b_start < a_end

    def before(self, earlier: str, later: str) -> bool:
        return self.spans[earlier][1] < self.spans[later][0]


def turn(*calls: tuple[str, dict]) -> dict:
    return {
        "tools": [
            {"id": f"id-{index}", "name": name, "arguments": arguments}
            for index, (name, arguments) in enumerate(calls)
        ]
    }


def agent_over(tools, *turns, **options):
    provider = ScriptedProvider(script=[*turns, {"content": "done"}])
    agent = create_agent(provider, tools=tools, **options)
    agent.context.messages.add({"role": "user", "content": "go"})
    return agent, provider


def tool_messages(agent):
    return [m for m in agent.context.messages.messages() if m.role == "tool"]


async def chunks_of(stream):
    chunks = [chunk async for chunk in stream.events]
    await stream.result
    return [chunk for chunk in chunks if chunk.type == "tool"]


# -- order -------------------------------------------------------------------------------------


async def test_a_mixed_turn_runs_contiguous_reads_together_and_each_write_alone_in_order():
    clock = Clock()
    tools = create_tool_manager([clock.tool("read", True), clock.tool("write", False, steps=6)])
    order = ["r1", "r2", "w1", "r3", "w2", "w3", "r4", "r5"]
    calls = [("read" if label[0] == "r" else "write", {"label": label}) for label in order]
    agent, _ = agent_over(tools, turn(*calls))
    await agent.generate()
    # Reads of one contiguous group overlap.
    assert clock.overlap("r1", "r2") and clock.overlap("r4", "r5")
    # A write starts after every call before it ended, and ends before any call after it.
    for earlier, later in itertools.pairwise(["r1", "w1", "r3", "w2", "w3", "r4"]):
        assert clock.before(earlier, later), (earlier, later, clock.spans)
    assert clock.before("r2", "w1") and clock.before("w3", "r5")
    # Results go back in call order.
    assert [json.loads(m.content) for m in tool_messages(agent)] == order
    assert [m.tool_call_id for m in tool_messages(agent)] == [f"id-{i}" for i in range(8)]


async def test_writes_run_one_at_a_time_in_call_order_even_when_a_later_one_is_quicker():
    clock = Clock()
    tools = create_tool_manager([clock.tool("write", False)])
    calls = [
        ("write", {"label": label, "steps": steps})
        for label, steps in [("a", 9), ("b", 0), ("c", 4)]
    ]
    agent, _ = agent_over(tools, turn(*calls))
    await agent.generate()
    assert clock.before("a", "b") and clock.before("b", "c")
    assert [json.loads(m.content) for m in tool_messages(agent)] == ["a", "b", "c"]


async def test_a_tool_left_at_the_default_is_a_write():
    clock = Clock()
    tools = create_tool_manager(
        [create_tool(name="plain", execute=clock.tool("plain", False).execute)]
    )
    agent, _ = agent_over(tools, turn(("plain", {"label": "x"}), ("plain", {"label": "y"})))
    await agent.generate()
    assert clock.before("x", "y")


async def test_safety_can_depend_on_the_arguments():
    clock = Clock()
    files = clock.tool("files", lambda arguments: arguments.get("op") == "read")
    agent, _ = agent_over(
        create_tool_manager([files]),
        turn(
            ("files", {"op": "read", "label": "a"}),
            ("files", {"op": "read", "label": "b"}),
            ("files", {"op": "edit", "label": "c"}),
            ("files", {"op": "read", "label": "d"}),
        ),
    )
    await agent.generate()
    assert clock.overlap("a", "b")
    assert clock.before("a", "c") and clock.before("b", "c") and clock.before("c", "d")


def test_is_safe_answers_for_a_bool_or_a_predicate_and_fails_closed():
    def noop(arguments):
        return None

    def broken(arguments):
        raise RuntimeError("no")

    assert create_tool(name="t", execute=noop, safe=True).is_safe({}) is True
    assert create_tool(name="t", execute=noop).is_safe({}) is False
    by_mode = create_tool(name="t", execute=noop, safe=lambda a: a.get("mode") == "r")
    assert (by_mode.is_safe({"mode": "r"}), by_mode.is_safe({"mode": "w"})) == (True, False)
    # Only ``True`` itself marks a read: a truthy non-bool or a raising predicate is a write.
    assert create_tool(name="t", execute=noop, safe=lambda a: 1).is_safe({}) is False
    assert create_tool(name="t", execute=noop, safe=broken).is_safe({}) is False


def test_a_predicate_leaves_the_definition_the_model_sees_unchanged():
    def noop(arguments):
        return None

    fixed = create_tool_manager([create_tool(name="t", execute=noop, description="d")])
    varying = create_tool_manager(
        [create_tool(name="t", execute=noop, description="d", safe=lambda a: True)]
    )
    assert fixed.definitions() == varying.definitions()


def test_safe_must_be_a_bool_or_a_callable():
    with pytest.raises(TypeError, match="safe must be a bool or a callable"):
        create_tool(name="t", execute=lambda: None, safe="yes")


async def test_an_abort_during_a_write_keeps_finished_calls_and_never_starts_later_ones():
    started: list[str] = []
    blocking = asyncio.Event()

    async def write(arguments):
        started.append(arguments["label"])
        if arguments["label"] == "slow":
            blocking.set()
            await asyncio.Event().wait()
        return arguments["label"]

    tools = create_tool_manager([create_tool(name="write", execute=write)])
    agent, _ = agent_over(
        tools,
        turn(
            ("write", {"label": "quick"}),
            ("write", {"label": "slow"}),
            ("write", {"label": "next"}),
        ),
    )
    stream = agent.stream()
    await blocking.wait()
    stream.abort("stop")
    result = await asyncio.wait_for(stream.result, 1)
    assert result.partial is True
    assert started == ["quick", "slow"]
    messages = tool_messages(agent)
    assert json.loads(messages[0].content) == "quick"
    assert [m.outcome.kind for m in messages] == ["value", "cancelled", "cancelled"]


# -- read-only mode ----------------------------------------------------------------------------


def read_write_tools(ran: list[str]):
    def read(arguments):
        ran.append("read")
        return "text"

    def write(arguments):
        ran.append("write")
        return "written"

    return create_tool_manager(
        [
            create_tool(name="read", execute=read, description="Read.", safe=True),
            create_tool(name="write", execute=write, description="Write."),
        ]
    )


async def test_read_only_advertises_the_whole_catalogue_but_runs_only_safe_calls():
    ran: list[str] = []
    denials = []
    agent, provider = agent_over(
        read_write_tools(ran),
        turn(("read", {}), ("write", {})),
        read_only=True,
        on={"deny": lambda call, decision: denials.append((call.name, decision))},
    )
    tools = await chunks_of(agent.stream())
    assert [definition.name for definition in provider.calls[0].tools] == ["read", "write"]
    assert ran == ["read"]
    refused = tools[1].result
    assert refused.error == REFUSAL
    assert refused.denial == ToolOutcome("denied", REFUSAL, None)
    assert refused.outcome.kind == "denied"
    read, write = tool_messages(agent)
    assert (read.content, read.outcome.kind) == ('"text"', "value")
    assert json.loads(write.content) == REFUSAL
    assert write.outcome == ToolOutcome("denied", REFUSAL, None)
    # The model reads the refusal on its next turn.
    assert provider.calls[1].messages[-1].content == json.dumps(REFUSAL)
    [(name, decision)] = denials
    assert (name, decision.zone, decision.allowed, decision.reason) == (
        "write",
        "read_only",
        False,
        REFUSAL,
    )


async def test_a_runs_read_only_option_wins_over_the_agents_for_that_run_only():
    ran: list[str] = []
    provider = ScriptedProvider(
        script=[turn(("write", {})), {"content": "a"}, turn(("write", {})), {"content": "b"}]
    )
    agent = create_agent(provider, tools=read_write_tools(ran))
    agent.context.messages.add({"role": "user", "content": "go"})
    await agent.generate(read_only=True)
    assert ran == []
    await agent.generate()
    assert ran == ["write"]


async def test_a_read_only_agent_can_be_opened_for_one_run_and_switched_at_runtime():
    ran: list[str] = []
    provider = ScriptedProvider(
        script=[
            *[part for label in "abc" for part in (turn(("write", {})), {"content": label})],
        ]
    )
    agent = create_agent(provider, tools=read_write_tools(ran), read_only=True)
    agent.context.messages.add({"role": "user", "content": "go"})
    await agent.generate(read_only=False)
    assert ran == ["write"]
    await agent.generate()
    assert ran == ["write"]
    agent.read_only = False
    await agent.generate()
    assert ran == ["write", "write"]


async def test_read_only_follows_an_argument_dependent_safety():
    ran: list[str] = []

    def files(arguments):
        ran.append(arguments["op"])
        return arguments["op"]

    tools = create_tool_manager(
        [create_tool(name="files", execute=files, safe=lambda a: a.get("op") == "read")]
    )
    agent, _ = agent_over(
        tools, turn(("files", {"op": "read"}), ("files", {"op": "edit"})), read_only=True
    )
    await agent.generate()
    assert ran == ["read"]
    assert [m.outcome.kind for m in tool_messages(agent)] == ["value", "denied"]


async def test_read_only_refuses_before_the_authority_is_asked():
    asked: list[str] = []

    def match(context):
        asked.append(context.call.name)
        return False

    authority = create_authority(rules=[{"match": match, "zone": "watch"}])
    agent, _ = agent_over(
        read_write_tools([]),
        turn(("write", {}), ("read", {})),
        read_only=True,
        authority=authority,
    )
    await agent.generate()
    assert asked == ["read"]


async def test_read_only_answers_an_unknown_tool_as_not_found():
    agent, _ = agent_over(read_write_tools([]), turn(("ghost", {})), read_only=True)
    await agent.generate()
    [message] = tool_messages(agent)
    assert json.loads(message.content) == "tool not found: ghost"
    assert message.outcome.kind == "error"


async def test_read_only_answers_unparsable_arguments_with_their_error():
    provider = ScriptedProvider(
        script=[{"tools": [ToolCall("c1", "write", {}, "not JSON")]}, {"content": "ok"}]
    )
    agent = create_agent(provider, tools=read_write_tools([]), read_only=True)
    agent.context.messages.add({"role": "user", "content": "go"})
    await agent.generate()
    [message] = tool_messages(agent)
    assert json.loads(message.content) == "invalid arguments for write: not JSON"


async def test_read_only_must_be_a_bool():
    with pytest.raises(TypeError, match="read_only must be a bool"):
        create_agent(ScriptedProvider(script=[]), read_only="yes")
    agent = create_agent(ScriptedProvider(script=[]))
    with pytest.raises(TypeError, match="read_only must be a bool"):
        agent.stream(read_only=1)
