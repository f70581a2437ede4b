"""A tool's ``system`` payload goes after the complete tool-call batch AND any queued user input
(seed 004): the scheduler's messages (sent meanwhile) come first, then the system texts."""

from __future__ import annotations

from orkestrel.core import AbortSignal, create_agent, create_tool, create_tool_manager
from orkestrel.providers import ScriptedProvider


def noting_tools():
    tools = create_tool_manager()
    tools.add(
        [
            create_tool(name="look", execute=lambda args: {"result": "seen", "system": "Note A."}),
            create_tool(name="peek", execute=lambda args: {"result": "ok", "system": ["Note B."]}),
        ]
    )
    return tools


def batch(*names: str) -> dict:
    return {
        "content": "",
        "tools": [{"id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(names)],
    }


class Queue:
    """A scheduler that adds the messages a person sent meanwhile, as the app's inbox does."""

    def __init__(self, agent_box: list, texts: list[str]) -> None:
        self.agent_box = agent_box
        self.texts = texts

    async def yield_(self, *, signal: AbortSignal | None = None) -> None:
        agent = self.agent_box[0]
        for text in self.texts:
            agent.context.messages.add({"role": "user", "content": text})
        self.texts = []


async def test_system_texts_follow_the_batch_and_the_queued_user_input():
    provider = ScriptedProvider(script=[batch("look", "peek"), {"content": "done"}])
    box: list = []
    agent = create_agent(
        provider, tools=noting_tools(), scheduler=Queue(box, ["and another thing"])
    )
    box.append(agent)
    agent.context.messages.add({"role": "user", "content": "look around"})

    assert (await agent.generate()).content == "done"

    sent = provider.calls[1].messages
    assert [m.role for m in sent] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "system",
        "system",
    ]
    assert [m.content for m in sent[-3:]] == ["and another thing", "Note A.", "Note B."]
    # The history holds them in the same order.
    stored = agent.context.messages.messages()
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "system",
        "system",
        "assistant",
    ]


async def test_without_queued_input_they_follow_the_batch_at_once():
    provider = ScriptedProvider(script=[batch("look"), {"content": "done"}])
    agent = create_agent(provider, tools=noting_tools())
    agent.context.messages.add({"role": "user", "content": "look"})
    await agent.generate()
    assert [m.role for m in provider.calls[1].messages] == ["user", "assistant", "tool", "system"]


async def test_a_run_that_ends_on_the_batch_still_keeps_its_system_texts():
    provider = ScriptedProvider(script=[batch("look")])
    agent = create_agent(provider, tools=noting_tools(), limit=1)
    agent.context.messages.add({"role": "user", "content": "look"})
    result = await agent.generate()
    assert result.stop == "exhaust"
    stored = agent.context.messages.messages()
    assert [(m.role, m.content) for m in stored[-2:]] == [("tool", '"seen"'), ("system", "Note A.")]
