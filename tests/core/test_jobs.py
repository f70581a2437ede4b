"""Durable agent jobs: registry, settle policy, queue, runner."""

import asyncio
import json

import pytest

from orkestrel.core import (
    AgentJobError,
    create_agent_queue,
    create_agent_registry,
    create_agent_runner,
    create_authority,
    create_memory_queue_store,
    create_tool,
    settle_agent_job,
)
from orkestrel.providers import ScriptedProvider


def echo_provider(delay=0.0):
    """Answers each call with the last user message, uppercased."""

    def answer(messages):
        last = [m for m in messages if m.role == "user"][-1]
        return {"content": [last.content.upper()], "delay": delay}

    return ScriptedProvider(script=[], fallback=answer)


def registry(**pools):
    return create_agent_registry(
        providers={"main": pools.pop("provider", echo_provider())}, **pools
    )


def job(text, **extra):
    return {"provider": "main", "messages": [{"role": "user", "content": text}], **extra}


def test_accessors_resolve_and_throw_category_specific_misses():
    tool = create_tool(name="t", execute=lambda a: 1)
    authority = create_authority()
    reg = create_agent_registry(
        providers={"main": echo_provider()}, tools={"t": tool}, authorities={"a": authority}
    )
    assert reg.tool("t") is tool and reg.authority("a") is authority
    for category, call in [
        ("provider", reg.provider),
        ("tool", reg.tool),
        ("authority", reg.authority),
        ("scheduler", reg.scheduler),
    ]:
        with pytest.raises(LookupError, match=f"unknown {category}: ghost"):
            call("ghost")


async def test_build_seeds_system_and_messages_and_resolves_tools():
    reg = registry(tools={"t": create_tool(name="t", execute=lambda a: 1)})
    agent = reg.build(job("hi", system="be kind", tools=["t"]))
    built = agent.context.build()
    assert built[0].content == "be kind" and built[1].content == "hi"
    assert agent.context.tools.tool("t") is not None
    with pytest.raises(LookupError, match="unknown tool: nope"):
        reg.build(job("hi", tools=["nope"]))


async def test_build_threads_a_pre_aborted_signal_into_a_partial():
    from orkestrel.core import create_abort

    abort = create_abort()
    abort.abort("gone")
    result = await registry().build(job("hi"), abort.signal).generate()
    assert result.partial is True


async def test_build_budget_ceiling_bounds_the_loop():
    provider = ScriptedProvider(
        script=[
            {
                "content": "",
                "tools": [{"name": "t", "arguments": {}}],
                "usage": {"prompt": 10, "completion": 10, "total": 20},
            },
            {"content": "never"},
        ]
    )
    reg = registry(provider=provider, tools={"t": create_tool(name="t", execute=lambda a: 1)})
    result = await reg.build(job("hi", tools=["t"], budget=20)).generate()
    assert result.partial is True and len(provider.calls) == 1


async def test_build_authority_and_limit_reach_the_loop():
    ran = []
    provider = ScriptedProvider(
        script=[{"content": "", "tools": [{"name": "t", "arguments": {}}]}, {"content": "x"}]
    )
    reg = registry(
        provider=provider,
        tools={"t": create_tool(name="t", execute=lambda a: ran.append(1))},
        authorities={"deny": create_authority(fallback={"zone": "z", "allowed": False})},
    )
    result = await reg.build(job("hi", tools=["t"], authority="deny", limit=1)).generate()
    assert ran == [] and result.stop == "exhaust"


@pytest.mark.parametrize(
    "bad",
    [
        {"messages": []},
        {"provider": 3, "messages": []},
        {"provider": "main", "messages": "hi"},
        {"provider": "main", "messages": [], "tools": "t"},
        {"provider": "main", "messages": [], "limit": -1},
        {"provider": "main", "messages": [], "timeout": 0},
        {"provider": "main", "messages": [], "children": [{"messages": []}]},
        {"provider": "main", "messages": [{"role": "user", "content": object()}]},
    ],
)
def test_malformed_jobs_are_rejected_with_a_named_field(bad):
    with pytest.raises(ValueError, match="job"):
        registry().build(bad)


async def test_settle_resolves_natural_finish_and_throws_partial_unless_allowed():
    from orkestrel.core import create_abort

    assert (await settle_agent_job(registry().build(job("a")))).content == "A"
    abort = create_abort()
    abort.abort()
    with pytest.raises(AgentJobError) as caught:
        await settle_agent_job(registry().build(job("a"), abort.signal))
    assert caught.value.partial.partial is True
    allowed = await settle_agent_job(registry().build(job("a"), abort.signal), allow_partial=True)
    assert allowed.partial is True


def test_job_input_is_json_serializable():
    data = job("x", children=[job("y")], budget=10, tools=["t"])
    assert json.loads(json.dumps(data)) == data


async def test_queue_runs_jobs_each_resolving_its_own_result():
    queue = create_agent_queue(registry=registry(), concurrency=2)
    results = await asyncio.gather(*(queue.enqueue(job(t)) for t in ["a", "b", "c"]))
    assert [r.content for r in results] == ["A", "B", "C"]


async def test_queue_bounds_in_flight_jobs_by_concurrency():
    peak = 0
    active = 0

    async def answer(messages):
        nonlocal peak, active
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return {"content": "ok"}

    reg = registry(provider=ScriptedProvider(script=[], fallback=answer))
    queue = create_agent_queue(registry=reg, concurrency=2)
    await asyncio.gather(*(queue.enqueue(job(str(i))) for i in range(6)))
    assert peak == 2


async def test_queue_partial_policy_with_retries():
    attempts = []

    def answer(messages):
        attempts.append(1)
        return {"content": ["slow"], "delay": 0.2}

    reg = registry(provider=ScriptedProvider(script=[], fallback=answer))
    queue = create_agent_queue(registry=reg, retries=1, timeout=0.02)
    with pytest.raises(AgentJobError):
        await queue.enqueue(job("x"))
    assert len(attempts) == 2
    lenient = create_agent_queue(registry=reg, timeout=0.02, allow_partial=True)
    assert (await lenient.enqueue(job("x"))).partial is True


async def test_memory_queue_store_round_trips_and_restore_reruns_outstanding_rows():
    from orkestrel.core import QueueRecord

    store = create_memory_queue_store()
    await store.set(QueueRecord("r1", job("left over")))
    assert [r.id for r in await store.list()] == ["r1"]
    queue = create_agent_queue(registry=registry(), store=store)
    results = await queue.restore()
    assert [r.content for r in results] == ["LEFT OVER"]
    assert await store.list() == []


async def test_queue_store_holds_a_job_only_while_it_is_outstanding():
    store = create_memory_queue_store()
    queue = create_agent_queue(registry=registry(provider=echo_provider(delay=0.02)), store=store)
    task = asyncio.ensure_future(queue.enqueue(job("x")))
    await asyncio.sleep(0.005)
    assert len(await store.list()) == 1
    await task
    assert await store.list() == []


async def test_queue_abort_fires_the_rehydrated_agents_signal():
    seen = []

    async def answer(messages):
        return {"content": ["a", "b", "c"], "delay": 0.05}

    provider = ScriptedProvider(script=[], fallback=answer)
    queue = create_agent_queue(registry=registry(provider=provider), allow_partial=True)
    task = asyncio.ensure_future(queue.enqueue(job("x")))
    await asyncio.sleep(0.02)
    queue.abort("stop")
    result = await asyncio.wait_for(task, 1)
    seen.append(result.partial)
    assert seen == [True]


async def test_runner_executes_in_order():
    runner = create_agent_runner(registry=registry(), concurrency=2)
    results = await runner.execute([job("a"), job("b")])
    assert [r.content for r in results] == ["A", "B"]


async def test_runner_fails_fast_aborting_siblings():
    def answer(messages):
        text = [m for m in messages if m.role == "user"][-1].content
        if text == "bad":
            return {"content": ["x", "y"], "delay": 0.05}
        return {"content": ["slow"] * 20, "delay": 0.05}

    reg = registry(provider=ScriptedProvider(script=[], fallback=answer))
    runner = create_agent_runner(registry=reg, concurrency=2, timeout=0.06)
    started = asyncio.get_running_loop().time()
    with pytest.raises(AgentJobError):
        await runner.execute([job("bad"), job("good")])
    assert asyncio.get_running_loop().time() - started < 0.5


async def test_runner_spawns_children_after_declared_jobs_without_deadlock():
    runner = create_agent_runner(registry=registry(), concurrency=1)
    parent = job("plan", children=[job("flights"), job("hotels", children=[job("rooms")])])
    results = await asyncio.wait_for(runner.execute([parent, job("other")]), 2)
    assert [r.content for r in results] == ["PLAN", "OTHER", "FLIGHTS", "HOTELS", "ROOMS"]


async def test_runner_abort_reaches_running_agents():
    async def answer(messages):
        return {"content": ["a"] * 50, "delay": 0.02}

    runner = create_agent_runner(
        registry=registry(provider=ScriptedProvider(script=[], fallback=answer)),
        allow_partial=True,
    )
    task = asyncio.ensure_future(runner.execute([job("x")]))
    await asyncio.sleep(0.05)
    runner.abort("stop")
    results = await asyncio.wait_for(task, 1)
    assert results[0].partial is True
