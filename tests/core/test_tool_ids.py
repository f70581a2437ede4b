"""Tool-call ids belong to the agent: minted when missing, re-minted when they repeat."""

from __future__ import annotations

import json

from orkestrel.core import Conversation, ToolCall, create_agent, create_tool, create_tool_manager
from orkestrel.providers import ScriptedProvider


def adder():
    return create_tool_manager(
        [create_tool(name="add", execute=lambda arguments: arguments["a"] + arguments["b"])]
    )


def add(call_id: str, a: int, b: int = 0) -> ToolCall:
    # A ``ToolCall`` reaches the loop as the provider built it (the scripted provider would
    # mint a missing id itself; a real one may not).
    return ToolCall(call_id, "add", {"a": a, "b": b})


async def run(script, conversation: Conversation | None = None):
    provider = ScriptedProvider(script=[*script, {"content": "done"}])
    agent = create_agent(provider, tools=adder(), conversation=conversation)
    agent.context.messages.add({"role": "user", "content": "go"})
    stream = agent.stream()
    chunks = [chunk async for chunk in stream.events]
    await stream.result
    return agent, provider, [chunk for chunk in chunks if chunk.type == "tool"]


def turns(agent):
    """Each assistant turn's call ids, and the tool messages' links with their values."""
    messages = agent.context.messages.messages()
    calls = [[call.id for call in m.calls] for m in messages if m.calls]
    links = [(m.tool_call_id, json.loads(m.content)) for m in messages if m.role == "tool"]
    return calls, links


async def test_a_missing_id_is_minted_and_links_the_call_to_its_result():
    agent, provider, chunks = await run([{"tools": [add("", 1, 1)]}])
    [[minted]], links = turns(agent)
    assert minted
    assert links == [(minted, 2)]
    assert chunks[0].call.id == minted and chunks[0].result.id == minted
    # The next request carries the minted id on both sides.
    sent = provider.calls[1].messages
    assert [call.id for call in sent[-2].calls] == [minted]
    assert sent[-1].tool_call_id == minted


async def test_a_blank_id_is_minted_too():
    agent, _, _ = await run([{"tools": [add("  ", 1)]}])
    [[minted]], _ = turns(agent)
    assert minted.strip()


async def test_two_calls_sharing_an_id_in_one_turn_keep_both_results():
    agent, provider, chunks = await run([{"tools": [add("dup", 1, 1), add("dup", 2, 2)]}])
    [[first, second]], links = turns(agent)
    assert first == "dup" and second not in ("dup", "")
    assert links == [("dup", 2), (second, 4)]
    assert [(chunk.call.id, chunk.result.value) for chunk in chunks] == [("dup", 2), (second, 4)]
    tool_ids = [m.tool_call_id for m in provider.calls[1].messages if m.role == "tool"]
    assert tool_ids == ["dup", second]


async def test_an_id_repeated_on_a_later_turn_of_the_run_is_reminted():
    agent, _, _ = await run([{"tools": [add("c1", 1)]}, {"tools": [add("c1", 2)]}])
    [[first], [second]], links = turns(agent)
    assert first == "c1" and second != "c1"
    assert links == [("c1", 1), (second, 2)]


async def test_an_id_from_the_conversations_history_is_reminted():
    conversation = Conversation()
    conversation.add(
        [
            {"role": "user", "content": "before"},
            {"role": "assistant", "content": "", "calls": [add("c1", 5).to_dict()]},
            {"role": "tool", "content": "5", "tool_call_id": "c1"},
            {"role": "assistant", "content": "five"},
        ]
    )
    agent, _, _ = await run([{"tools": [add("c1", 7)]}], conversation)
    [[old], [new]], links = turns(agent)
    assert old == "c1" and new != "c1"
    assert links == [("c1", 5), (new, 7)]


async def test_an_id_answered_by_an_orphan_tool_message_is_reminted():
    conversation = Conversation()
    conversation.add({"role": "tool", "content": "1", "tool_call_id": "c9"})
    agent, _, _ = await run([{"tools": [add("c9", 1)]}], conversation)
    [[new]], _ = turns(agent)
    assert new != "c9"


async def test_an_id_in_a_compacted_section_is_reminted():
    folded = [
        {"id": "m1", "role": "assistant", "content": "", "calls": [add("old", 1).to_dict()]},
        {"id": "m2", "role": "tool", "content": "1", "tool_call_id": "old"},
    ]
    conversation = Conversation(
        snapshot={
            "id": "conv",
            "summary": "s",
            "sections": [{"id": "s1", "summary": "s", "messages": folded}],
            "messages": [],
        }
    )
    agent, _, _ = await run([{"tools": [add("old", 3)]}], conversation)
    [[new]], _ = turns(agent)
    assert new != "old"


async def test_unique_ids_are_kept_as_the_model_sent_them():
    agent, _, _ = await run([{"tools": [add("a", 1), add("b", 2)]}, {"tools": [add("c", 3)]}])
    calls, _ = turns(agent)
    assert calls == [["a", "b"], ["c"]]
