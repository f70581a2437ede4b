"""The agent loop's deterministic behaviour, against the ScriptedProvider."""

import asyncio

import pytest

from orkestrel.core import (
    DEFAULT_AGENT_LIMIT,
    AgentError,
    ProviderError,
    TokenUsage,
    create_abort,
    create_agent,
    create_authority,
    create_budget,
    create_conversation_manager,
    create_scope,
    create_sleep_scheduler,
    create_token_budget,
    create_tool,
    create_tool_manager,
    estimate_messages,
)
from orkestrel.providers import ScriptedProvider


def calc_tools(counter=None):
    def add(args):
        if counter is not None:
            counter.append(args)
        return args["a"] + args["b"]

    def boom(args):
        raise RuntimeError("kaput")

    tools = create_tool_manager()
    tools.add(
        [
            create_tool(name="add", execute=add, description="Add two numbers"),
            create_tool(name="boom", execute=boom),
        ]
    )
    return tools


def tool_turn(name="add", arguments=None, call_id="c1", content=""):
    return {
        "content": content,
        "tools": [{"id": call_id, "name": name, "arguments": arguments or {"a": 2, "b": 3}}],
    }


async def test_single_turn_without_tools_returns_content():
    provider = ScriptedProvider(script=[{"content": "hello"}])
    agent = create_agent(provider)
    agent.context.messages.add({"role": "user", "content": "hi"})
    result = await agent.generate()
    assert result.content == "hello" and result.partial is False
    assert [m.role for m in agent.context.messages.messages()] == ["user", "assistant"]
    provider.assert_consumed()


async def test_system_prompt_is_prepended_and_tools_advertised_structurally():
    provider = ScriptedProvider(script=[{"content": "ok"}])
    agent = create_agent(provider, system="Be brief.", tools=calc_tools())
    agent.context.messages.add({"role": "user", "content": "hi"})
    await agent.generate()
    call = provider.calls[0]
    assert call.messages[0].role == "system" and call.messages[0].content == "Be brief."
    assert [d.name for d in call.tools] == ["add", "boom"]
    assert all("Add two numbers" not in m.content for m in call.messages)


async def test_tool_iteration_feeds_the_result_back():
    provider = ScriptedProvider(script=[tool_turn(), {"content": "5"}])
    agent = create_agent(provider, tools=calc_tools())
    agent.context.messages.add({"role": "user", "content": "add"})
    result = await agent.generate()
    assert result.content == "5"
    second = provider.calls[1].messages
    assert second[-2].role == "assistant" and second[-2].calls[0].name == "add"
    assert second[-1].role == "tool" and second[-1].content == "5"
    assert second[-1].tool_call_id == "c1"


async def test_tool_throw_is_fed_back_as_tool_message_not_raised():
    provider = ScriptedProvider(script=[tool_turn("boom"), {"content": "sorry"}])
    agent = create_agent(provider, tools=calc_tools())
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.content == "sorry"
    assert provider.calls[1].messages[-1].content == '"kaput"'


@pytest.mark.parametrize(
    "call",
    [
        {"id": "u", "name": "ghost", "arguments": {}},
        {"id": "s", "name": "add", "arguments": {"a": 1}},
    ],
)
async def test_malformed_model_tool_calls_become_tool_errors(call):
    provider = ScriptedProvider(script=[{"content": "", "tools": [call]}, {"content": "done"}])
    agent = create_agent(provider, tools=calc_tools())
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream()
    chunks = [c async for c in stream.events]
    result = await stream.result
    tool = next(c for c in chunks if c.type == "tool")
    assert tool.result.error
    assert result.content == "done"


async def test_generate_and_stream_agree():
    def script():
        return [
            {
                "thinking": "hmm",
                "content": ["a", "b"],
                "tools": [{"id": "1", "name": "add", "arguments": {"a": 1, "b": 1}}],
                "usage": {"prompt": 3, "completion": 2, "total": 5},
            },
            {"content": ["2"], "usage": {"prompt": 5, "completion": 1, "total": 6}},
        ]

    first = create_agent(ScriptedProvider(script=script()), tools=calc_tools())
    first.context.messages.add({"role": "user", "content": "x"})
    second = create_agent(ScriptedProvider(script=script()), tools=calc_tools())
    second.context.messages.add({"role": "user", "content": "x"})
    generated = await first.generate()
    stream = second.stream()
    async for _ in stream.events:
        pass
    assert generated == await stream.result


async def test_chunk_sequence_and_summed_usage():
    provider = ScriptedProvider(
        script=[
            {
                "thinking": ["th"],
                "content": ["a", "b"],
                "tools": [{"id": "1", "name": "add", "arguments": {"a": 1, "b": 2}}],
                "usage": {"prompt": 1, "completion": 2, "total": 3},
            },
            {"content": ["c"], "usage": {"prompt": 4, "completion": 5, "total": 9}},
        ]
    )
    agent = create_agent(provider, tools=calc_tools())
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream()
    chunks = [c async for c in stream.events]
    result = await stream.result
    assert [c.type for c in chunks] == [
        "think",
        "token",
        "token",
        "usage",
        "tool",
        "token",
        "usage",
    ]
    tool = chunks[4]
    assert tool.call.name == "add" and tool.result.value == 3
    assert result.usage == TokenUsage(5, 7, 12)
    assert result.thinking == "th"
    assert result.content == "c"


async def test_per_run_think_and_schema_reach_the_provider_as_one_options_object():
    provider = ScriptedProvider(script=[{"content": "a"}, {"content": "b"}, {"content": "c"}])
    agent = create_agent(provider)
    agent.context.messages.add({"role": "user", "content": "x"})
    await agent.generate(think=True)
    await agent.generate(schema={"type": "object"})
    await agent.generate()
    assert provider.calls[0].options.think is True and provider.calls[0].options.schema is None
    assert provider.calls[1].options.schema == {"type": "object"}
    assert provider.calls[2].options is None


async def test_iteration_cap_stops_an_always_tool_script_with_exhaust():
    provider = ScriptedProvider(script=[tool_turn(call_id=str(i)) for i in range(3)])
    events = []
    agent = create_agent(
        provider,
        tools=calc_tools(),
        limit=3,
        on={"exhaust": events.append, "abort": lambda r: events.append("abort")},
    )
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.partial is True and result.stop == "exhaust"
    assert events == [3]
    assert len(provider.calls) == 3


async def test_natural_finish_on_last_allowed_turn_is_not_partial():
    provider = ScriptedProvider(script=[tool_turn(), {"content": "done"}])
    agent = create_agent(provider, tools=calc_tools(), limit=2)
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.partial is False and result.content == "done"


async def test_limit_zero_never_calls_the_provider():
    provider = ScriptedProvider(script=[])
    agent = create_agent(provider, limit=0)
    result = await agent.generate()
    assert result.partial is False and provider.calls == []


def test_default_limit_is_ten():
    assert create_agent(ScriptedProvider(script=[])).limit == DEFAULT_AGENT_LIMIT == 10


async def test_pre_aborted_signal_commits_partial_without_calling_provider():
    abort = create_abort()
    abort.abort("stop")
    provider = ScriptedProvider(script=[{"content": "never"}])
    seen = []
    agent = create_agent(
        provider, signal=abort.signal, on={"abort": seen.append, "finish": seen.append}
    )
    result = await agent.generate()
    assert result.partial is True and result.content == "" and provider.calls == []
    assert seen[0] == "stop" and seen[1] is result


async def test_abort_mid_stream_resolves_partial_with_streamed_content():
    provider = ScriptedProvider(script=[{"content": ["a", "b", "c", "d"], "delay": 0.01}])
    agent = create_agent(provider)
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream()
    tokens = []
    async for chunk in stream.events:
        tokens.append(chunk.content)
        if len(tokens) == 2:
            stream.abort("user stop")
    result = await stream.result
    assert result.partial is True and result.stop == "abort"
    assert result.content == "".join(tokens) == "ab"
    assert agent.context.messages.messages()[-1].content == "ab"
    assert agent.status == "done"


async def test_genuine_provider_error_rejects_and_sets_error_status():
    provider = ScriptedProvider(
        script=[{"error": ProviderError("down", provider="scripted", status=500)}]
    )
    errors = []
    agent = create_agent(
        provider, on={"error": errors.append, "finish": lambda r: errors.append("finish")}
    )
    agent.context.messages.add({"role": "user", "content": "x"})
    with pytest.raises(ProviderError):
        await agent.generate()
    assert agent.status == "error"
    assert len(errors) == 1 and isinstance(errors[0], ProviderError)


async def test_timeout_commits_partial():
    provider = ScriptedProvider(script=[{"content": ["a", "b", "c"], "delay": 0.05}])
    agent = create_agent(provider, timeout=0.07)
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.partial is True and result.reason == "timeout"
    assert result.content == "a"


async def test_token_budget_exhaustion_stops_the_run():
    provider = ScriptedProvider(
        script=[
            {**tool_turn(), "usage": {"prompt": 50, "completion": 50, "total": 100}},
            {"content": "never"},
        ]
    )
    agent = create_agent(provider, tools=calc_tools(), budget=create_token_budget(100))
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.partial is True and result.stop == "abort"
    assert len(provider.calls) == 1


async def test_budget_metered_mid_stream_then_reconciled_without_double_charge():
    budget = create_token_budget(10_000)
    provider = ScriptedProvider(
        script=[
            {"content": ["x" * 40, "y" * 40], "usage": {"prompt": 7, "completion": 30, "total": 37}}
        ]
    )
    agent = create_agent(provider, budget=budget)
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert budget.consumed == 37
    assert result.usage == TokenUsage(7, 30, 37)


async def test_budget_trips_mid_stream_before_usage_is_known():
    provider = ScriptedProvider(
        script=[{"content": ["x" * 40, "y" * 40, "z" * 40], "delay": 0.001}]
    )
    agent = create_agent(provider, budget=create_token_budget(15))
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.partial is True
    assert result.content == "x" * 40 + "y" * 40


async def test_scheduler_yields_between_turns_only():
    class Counting:
        def __init__(self):
            self.count = 0

        async def yield_(self, *, signal=None):
            self.count += 1

    scheduler = Counting()
    provider = ScriptedProvider(
        script=[tool_turn(call_id="1"), tool_turn(call_id="2"), {"content": "x"}]
    )
    agent = create_agent(provider, tools=calc_tools(), scheduler=scheduler)
    agent.context.messages.add({"role": "user", "content": "x"})
    await agent.generate()
    assert scheduler.count == 2


async def test_messages_the_scheduler_appends_join_the_next_request_after_the_results():
    class Inbox:
        def __init__(self, agent):
            self.agent = agent

        async def yield_(self, *, signal=None):
            self.agent.context.messages.add({"role": "user", "content": "also this"})

    provider = ScriptedProvider(script=[tool_turn(call_id="1"), {"content": "both"}])
    agent = create_agent(provider, tools=calc_tools())
    agent.scheduler = Inbox(agent)
    agent.context.messages.add({"role": "user", "content": "x"})
    assert (await agent.generate()).content == "both"
    sent = provider.calls[1].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[-1].content == "also this"


async def test_sleep_scheduler_paces_turns():
    provider = ScriptedProvider(script=[tool_turn(), {"content": "x"}])
    agent = create_agent(provider, tools=calc_tools(), scheduler=create_sleep_scheduler(0))
    agent.context.messages.add({"role": "user", "content": "x"})
    assert (await agent.generate()).content == "x"


async def test_status_goes_idle_running_done():
    provider = ScriptedProvider(script=[{"content": ["a"], "delay": 0.01}])
    agent = create_agent(provider)
    agent.context.messages.add({"role": "user", "content": "x"})
    assert agent.status == "idle"
    stream = agent.stream()
    assert agent.status == "running"
    await stream.result
    assert agent.status == "done"


async def test_events_fire_in_order_with_listener_errors_isolated():
    log = []
    errors = []

    def broken(*args):
        raise RuntimeError("listener bug")

    provider = ScriptedProvider(
        script=[
            {**tool_turn(), "usage": {"prompt": 1, "completion": 1, "total": 2}},
            {"content": "ok"},
        ]
    )
    agent = create_agent(
        provider,
        tools=calc_tools(),
        on={
            "start": [lambda: log.append("start"), broken],
            "turn": lambda n: log.append(f"turn{n}"),
            "usage": lambda u: log.append("usage"),
            "tool": lambda c, r: log.append("tool"),
            "finish": lambda r: log.append("finish"),
        },
        error=lambda error, event: errors.append(event),
    )
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.content == "ok"
    assert log == ["start", "turn0", "usage", "tool", "turn1", "finish"]
    assert errors == ["start"]


async def test_authority_denied_call_is_fed_back_and_never_executed():
    counter = []
    authority = create_authority(
        rules=[
            {
                "match": lambda c: c.call.name == "add",
                "zone": "restricted",
                "allowed": False,
                "reason": "read-only",
            }
        ]
    )
    denials = []
    provider = ScriptedProvider(script=[tool_turn(), {"content": "ok"}])
    agent = create_agent(
        provider,
        tools=calc_tools(counter),
        authority=authority,
        on={"deny": lambda call, decision: denials.append((call.name, decision.zone))},
    )
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream()
    chunks = [c async for c in stream.events]
    await stream.result
    assert counter == []
    tool = next(c for c in chunks if c.type == "tool")
    assert tool.result.error == "denied: read-only"
    assert provider.calls[1].messages[-1].content == '"denied: read-only"'
    assert denials == [("add", "restricted")]


async def test_authority_without_reason_uses_generic_denial_and_keeps_call_order():
    authority = create_authority(
        rules=[{"match": lambda c: c.call.arguments.get("a") == 9, "zone": "z", "allowed": False}]
    )
    counter = []
    provider = ScriptedProvider(
        script=[
            {
                "content": "",
                "tools": [
                    {"id": "1", "name": "add", "arguments": {"a": 1, "b": 1}},
                    {"id": "2", "name": "add", "arguments": {"a": 9, "b": 1}},
                    {"id": "3", "name": "add", "arguments": {"a": 2, "b": 2}},
                ],
            },
            {"content": "ok"},
        ]
    )
    agent = create_agent(provider, tools=calc_tools(counter), authority=authority)
    agent.context.messages.add({"role": "user", "content": "x"})
    await agent.generate()
    tool_messages = [m for m in provider.calls[1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == ["1", "2", "3"]
    assert [m.content for m in tool_messages] == ["2", '"denied by authority"', "4"]
    assert len(counter) == 2


async def test_all_denied_turns_are_still_bounded_by_the_cap():
    authority = create_authority(fallback={"zone": "locked", "allowed": False})
    provider = ScriptedProvider(script=[tool_turn(call_id=str(i)) for i in range(2)])
    agent = create_agent(provider, tools=calc_tools(), authority=authority, limit=2)
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.stop == "exhaust" and len(provider.calls) == 2


async def test_scope_filters_advertised_tools_on_every_turn_and_blocks_calls():
    counter = []
    provider = ScriptedProvider(script=[tool_turn("add"), {"content": "ok"}])
    agent = create_agent(
        provider, tools=calc_tools(counter), scope=create_scope(name="s", tools=["boom"])
    )
    agent.context.messages.add({"role": "user", "content": "x"})
    await agent.generate()
    assert all([d.name for d in call.tools] == ["boom"] for call in provider.calls)
    assert counter == []
    assert provider.calls[1].messages[-1].content == '"tool not found: add"'


async def test_empty_scope_tools_hands_provider_none():
    provider = ScriptedProvider(script=[{"content": "ok"}])
    agent = create_agent(provider, tools=calc_tools(), scope=create_scope(name="s", tools=[]))
    await agent.generate()
    assert provider.calls[0].tools is None


async def test_per_run_limit_overrides_construction_default_for_that_run_only():
    provider = ScriptedProvider(
        script=[tool_turn(call_id="1"), tool_turn(call_id="2"), {"content": "x"}]
    )
    agent = create_agent(provider, tools=calc_tools(), limit=5)
    agent.context.messages.add({"role": "user", "content": "x"})
    first = await agent.generate(limit=1)
    assert first.stop == "exhaust"
    second = await agent.generate()
    assert second.content == "x"


async def test_per_run_signal_composes_with_constructed_signal():
    constructed = create_abort()
    per_run = create_abort()
    provider = ScriptedProvider(
        script=[{"content": ["a", "b"], "delay": 0.01}, {"content": ["c", "d"], "delay": 0.01}]
    )
    agent = create_agent(provider, signal=constructed.signal)
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream(signal=per_run.signal)
    async for _ in stream.events:
        per_run.abort("per-run")
    assert (await stream.result).reason == "per-run"
    stream = agent.stream()
    async for _ in stream.events:
        constructed.abort("constructed")
    assert (await stream.result).reason == "constructed"


async def test_per_run_budget_is_charged_instead_of_constructed_budget():
    constructed = create_token_budget(1000)
    per_run = create_token_budget(1000)
    provider = ScriptedProvider(
        script=[{"content": "a", "usage": {"prompt": 1, "completion": 1, "total": 2}}]
    )
    agent = create_agent(provider, budget=constructed)
    await agent.generate(budget=per_run)
    assert per_run.consumed == 2 and constructed.consumed == 0


async def test_concurrent_run_sharing_a_budget_raises_synchronously():
    provider = ScriptedProvider(
        script=[{"content": ["a", "b"], "delay": 0.01}, {"content": "x"}, {"content": "y"}]
    )
    agent = create_agent(provider, budget=create_token_budget(1000))
    first = agent.stream()
    with pytest.raises(AgentError) as caught:
        agent.stream()
    assert caught.value.code == "CONCURRENCY"
    second = agent.stream(budget=create_token_budget(10))
    await first.result
    await second.result


async def test_abort_during_a_slow_tool_settles_partial_and_leaves_no_orphan_call():
    started = asyncio.Event()

    async def slow(args):
        started.set()
        await asyncio.sleep(10)

    tools = create_tool_manager()
    tools.add(create_tool(name="slow", execute=slow))
    provider = ScriptedProvider(script=[tool_turn("slow")])
    agent = create_agent(provider, tools=tools)
    agent.context.messages.add({"role": "user", "content": "x"})
    stream = agent.stream()
    await started.wait()
    stream.abort("stop")
    result = await asyncio.wait_for(stream.result, 1)
    assert result.partial is True
    last = agent.context.messages.messages()[-1]
    assert last.role == "tool" and "cancelled" in last.content


async def test_reasoning_never_reenters_the_conversation():
    provider = ScriptedProvider(
        script=[{"thinking": "secret plan", "content": "answer"}, {"content": "again"}]
    )
    agent = create_agent(provider)
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.thinking == "secret plan"
    await agent.generate()
    assert all("secret plan" not in m.content for m in provider.calls[1].messages)


# -- automatic compaction -------------------------------------------------------------------


async def summarize(messages):
    return "S:" + "|".join(m.content[:3] for m in messages)


async def test_window_compacts_between_turns_and_run_answers_through_compacted_view():
    threads = create_conversation_manager(summarize=summarize, keep=1)
    provider = ScriptedProvider(
        script=[
            {**tool_turn(call_id="1", content="x" * 200)},
            {**tool_turn(call_id="2", content="y" * 200)},
            {"content": "final"},
        ]
    )
    agent = create_agent(
        provider,
        tools=calc_tools(),
        conversations=threads,
        window=create_budget(100, estimate_messages),
    )
    agent.context.messages.add({"role": "user", "content": "hello"})
    result = await agent.generate()
    assert result.content == "final"
    conversation = agent.context.messages
    assert len(conversation.sections) >= 1
    last_input = provider.calls[-1].messages
    assert last_input[0].content.startswith("[Summary of earlier messages]")


async def test_window_below_the_ceiling_never_compacts():
    threads = create_conversation_manager(summarize=summarize)
    provider = ScriptedProvider(script=[tool_turn(), {"content": "ok"}])
    agent = create_agent(
        provider,
        tools=calc_tools(),
        conversations=threads,
        window=create_budget(100_000, estimate_messages),
    )
    agent.context.messages.add({"role": "user", "content": "hello"})
    await agent.generate()
    assert agent.context.messages.sections == ()


async def test_without_a_summarizer_the_window_is_skipped():
    window = create_budget(1, estimate_messages)
    provider = ScriptedProvider(script=[{"content": "ok"}])
    agent = create_agent(provider, window=window)
    agent.context.messages.add({"role": "user", "content": "hello"})
    assert (await agent.generate()).content == "ok"
    assert window.consumed == 0


async def test_long_initial_prompt_compacts_before_the_first_request():
    threads = create_conversation_manager(summarize=summarize, keep=1)
    provider = ScriptedProvider(script=[{"content": "ok"}])
    agent = create_agent(
        provider, conversations=threads, window=create_budget(60, estimate_messages)
    )
    for i in range(10):
        agent.context.messages.add(
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 5}
        )
    await agent.generate()
    first = provider.calls[0].messages
    assert first[0].content.startswith("[Summary of earlier messages]")


async def test_throwing_auto_summarizer_emits_compact_error_and_run_continues():
    async def broken(messages):
        raise RuntimeError("summarizer down")

    errors = []
    threads = create_conversation_manager(summarize=broken)
    provider = ScriptedProvider(script=[{"content": "ok"}])
    agent = create_agent(
        provider,
        conversations=threads,
        window=create_budget(1, estimate_messages),
        on={"compact_error": errors.append},
    )
    agent.context.messages.add({"role": "user", "content": "hello there"})
    result = await agent.generate()
    assert result.content == "ok" and len(errors) == 1
    with pytest.raises(RuntimeError):
        await agent.context.messages.compact()


async def test_strict_rethrows_auto_summarizer_failure():
    async def broken(messages):
        raise RuntimeError("summarizer down")

    threads = create_conversation_manager(summarize=broken)
    agent = create_agent(
        ScriptedProvider(script=[{"content": "ok"}]),
        conversations=threads,
        window=create_budget(1, estimate_messages),
        strict=True,
    )
    agent.context.messages.add({"role": "user", "content": "hello there"})
    with pytest.raises(RuntimeError, match="summarizer down"):
        await agent.generate()
    assert agent.status == "error"


async def test_futile_compaction_latches_for_the_run():
    calls = []

    async def counting(messages):
        calls.append(len(messages))
        return "a very long summary " * 50

    threads = create_conversation_manager(summarize=counting)
    provider = ScriptedProvider(
        script=[tool_turn(call_id="1"), tool_turn(call_id="2"), {"content": "ok"}]
    )
    agent = create_agent(
        provider,
        tools=calc_tools(),
        conversations=threads,
        window=create_budget(10, estimate_messages),
    )
    agent.context.messages.add({"role": "user", "content": "hello"})
    result = await agent.generate()
    assert result.content == "ok"
    # One real fold (two calls: section + rollup); the next check folds nothing and latches.
    assert len(calls) <= 4


async def test_one_agent_serves_many_conversations_independently():
    threads = create_conversation_manager()
    provider = ScriptedProvider(
        script=[{"content": "hi ada"}, {"content": "four"}, {"content": "Ada"}]
    )
    agent = create_agent(provider, conversations=threads)

    async def handle(thread, text):
        if threads.conversation(thread) is None:
            threads.add(id=thread)
        threads.switch(thread)
        agent.context.messages.add({"role": "user", "content": text})
        return (await agent.generate()).content

    await handle("u1", "I am Ada")
    await handle("u2", "2+2?")
    await handle("u1", "name?")
    assert [m.content for m in provider.calls[2].messages] == ["I am Ada", "hi ada", "name?"]
    assert [m.content for m in threads.conversation("u2").messages()] == ["2+2?", "four"]


async def test_two_hundred_agents_run_concurrently_with_their_own_budgets():
    async def one(i):
        provider = ScriptedProvider(
            script=[
                {
                    **tool_turn(arguments={"a": i, "b": 1}),
                    "delay": 0.001,
                    "usage": {"prompt": 1, "completion": 1, "total": 2},
                },
                {
                    "content": [str(i + 1)],
                    "delay": 0.001,
                    "usage": {"prompt": 1, "completion": 1, "total": 2},
                },
            ]
        )
        budget = create_token_budget(100)
        agent = create_agent(provider, tools=calc_tools(), budget=budget)
        agent.context.messages.add({"role": "user", "content": "x"})
        result = await agent.generate()
        return result, budget.consumed

    outcomes = await asyncio.gather(*(one(i) for i in range(200)))
    for i, (result, consumed) in enumerate(outcomes):
        assert result.content == str(i + 1) and not result.partial
        assert consumed == 4


async def test_unparsable_arguments_from_the_model_become_a_tool_error_it_sees():
    counter = []
    call = {
        "id": "c9",
        "name": "add",
        "arguments": {},
        "error": "arguments are not a JSON object: '{oops'",
    }
    provider = ScriptedProvider(script=[{"content": "", "tools": [call]}, {"content": "fixed"}])
    agent = create_agent(provider, tools=calc_tools(counter))
    agent.context.messages.add({"role": "user", "content": "x"})
    result = await agent.generate()
    assert result.content == "fixed" and counter == []
    fed_back = provider.calls[1].messages[-1].content
    assert "invalid arguments for add" in fed_back and "{oops" in fed_back
