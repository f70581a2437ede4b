"""Agent-loop overhead with a zero-latency scripted model, every loop feature switched on.

Scenarios: a two-turn run (one tool call, then an answer) and an eleven-turn run (ten tool
calls, then an answer). Each run has an event listener, a token budget, an authority, a scope,
and consumes the stream chunk by chunk. Prints median / p95 per run and per turn, and peak
memory of one run. Usage: ``.venv/bin/python bench/loop.py [--runs N]``.

``--telemetry`` measures instead what the app's observer (``orkestrel.telemetry``) adds to a
run's CPU (``time.process_time``, the span exporter's thread included): off, metrics only,
then traces and metrics with spans sent to a loopback OTLP collector (``bench/otlp_sink.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orkestrel.core import (
    create_agent,
    create_authority,
    create_scope,
    create_token_budget,
    create_tool,
    create_tool_manager,
)
from orkestrel.providers import ScriptedProvider, ScriptedTurn
from orkestrel.telemetry.observer import RunLabels, RunTelemetry
from orkestrel.telemetry.switch import SWITCH
from orkestrel.telemetry.tracing import use_tracer_provider

USAGE = {"prompt": 20, "completion": 5, "total": 25}


def script(tool_turns: int) -> list[ScriptedTurn]:
    turns = [
        ScriptedTurn(
            content=["Let me ", "check."],
            tools=[{"id": f"c{i}", "name": "add", "arguments": {"a": i, "b": 1}}],
            usage=USAGE,
        )
        for i in range(tool_turns)
    ]
    turns.append(ScriptedTurn(content=["The ", "answer ", "is ", "42."], usage=USAGE))
    return turns


def build(tool_turns: int, tools, authority, scope):
    provider = ScriptedProvider(script=script(tool_turns))
    events = []
    agent = create_agent(
        provider,
        tools=tools,
        authority=authority,
        scope=scope,
        budget=create_token_budget(1_000_000),
        limit=tool_turns + 1,
        on={"finish": events.append, "tool": lambda call, result: None},
    )
    agent.context.messages.add({"role": "user", "content": "What is 41 + 1?"})
    return agent


async def one_run(agent) -> None:
    stream = agent.stream()
    async for _chunk in stream.events:
        pass
    result = await stream.result
    assert not result.partial, result


async def measure(tool_turns: int, runs: int) -> list[float]:
    tools = create_tool_manager()
    tools.add([create_tool(name="add", execute=lambda args: args["a"] + args["b"], safe=True)])
    authority = create_authority(
        rules=[{"match": lambda c: c.call.name == "delete", "zone": "danger", "allowed": False}]
    )
    scope = create_scope(name="bench", tools=["add"])
    samples = []
    for _ in range(50):  # warm up
        await one_run(build(tool_turns, tools, authority, scope))
    for _ in range(runs):
        agent = build(tool_turns, tools, authority, scope)
        started = time.perf_counter()
        await one_run(agent)
        samples.append(time.perf_counter() - started)
    return samples


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[18]


async def peak_memory(tool_turns: int) -> int:
    tools = create_tool_manager()
    tools.add([create_tool(name="add", execute=lambda args: args["a"] + args["b"])])
    authority = create_authority()
    scope = create_scope(name="bench", tools=["add"])
    agent = build(tool_turns, tools, authority, scope)
    tracemalloc.start()
    await one_run(agent)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


LABELS = RunLabels(kind="chat", profile="bench", provider="openai", model="m", run_id=1)


async def observed_cpu(tool_turns: int, runs: int, observed: bool) -> float:
    """CPU seconds per run, with a ``RunTelemetry`` on each agent when ``observed``."""
    tools = create_tool_manager()
    tools.add([create_tool(name="add", execute=lambda args: args["a"] + args["b"], safe=True)])
    authority = create_authority()
    scope = create_scope(name="bench", tools=["add"])

    async def once() -> None:
        agent = build(tool_turns, tools, authority, scope)
        if observed:
            agent.observer = RunTelemetry(LABELS)
        await one_run(agent)

    for _ in range(100):
        await once()
    started = time.process_time()
    for _ in range(runs):
        await once()
    return (time.process_time() - started) / runs


async def telemetry(runs: int) -> None:
    """A run's CPU with the observer off, metrics only, then traces and metrics."""
    # Imported here: the plain loop benchmark needs neither the SDK nor the collector.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from bench.otlp_sink import Sink

    sink = Sink()
    provider = TracerProvider()
    # The queue holds every span of the measured runs: none dropped, each one exported.
    processor = BatchSpanProcessor(
        OTLPSpanExporter(endpoint=f"{sink.url}/v1/traces"), max_queue_size=runs * 50
    )
    provider.add_span_processor(processor)
    print(f"python {sys.version.split()[0]}, {runs} runs per case, CPU per run")
    for label, tool_turns in (("two-turn", 1), ("eleven-turn", 10)):
        SWITCH.metrics = False
        off = await observed_cpu(tool_turns, runs, observed=False)
        SWITCH.metrics = True
        metrics = await observed_cpu(tool_turns, runs, observed=True)
        use_tracer_provider(provider)
        both = await observed_cpu(tool_turns, runs, observed=True)
        provider.force_flush()
        use_tracer_provider(None)
        print(
            f"{label:12} off {off * 1e6:7.1f} µs   metrics +{(metrics - off) * 1e6:6.1f} µs   "
            f"traces and metrics +{(both - off) * 1e6:6.1f} µs ({tool_turns + 1} requests, "
            f"{tool_turns} tool calls)"
        )
    provider.shutdown()
    sink.close()
    print(f"{sink.spans:,} spans reached the collector")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--telemetry", action="store_true", help="what the observer adds")
    args = parser.parse_args()
    if args.telemetry:
        await telemetry(args.runs)
        return
    print(f"python {sys.version.split()[0]}, {args.runs} runs per scenario")
    for label, tool_turns in (("two-turn", 1), ("eleven-turn", 10)):
        samples = await measure(tool_turns, args.runs)
        turns = tool_turns + 1
        median = statistics.median(samples)
        peak = await peak_memory(tool_turns) / 1024
        print(
            f"{label:12} median {median * 1e6:8.1f} µs  p95 {p95(samples) * 1e6:8.1f} µs  "
            f"per turn {median / turns * 1e6:6.1f} µs  peak {peak:.1f} KiB"
        )


if __name__ == "__main__":
    asyncio.run(main())
