"""``AgentContext.build()`` and ``Conversation.search`` at scale.

``build()`` for 1,000 and 10,000 messages with 20 instructions and 50 workspace files, and
``search`` over 10,000 messages. ``build()`` must grow linearly: the 10x input within 12x the
time. Usage: ``.venv/bin/python bench/context.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orkestrel.core import create_agent_context


def context_with(messages: int):
    context = create_agent_context(system="You are a careful assistant.")
    context.instructions.add(
        [
            {"name": f"rule-{i}", "content": f"Instruction number {i}.", "priority": i % 5}
            for i in range(20)
        ]
    )
    workspace = context.workspaces.add()
    workspace.write(
        {f"src/module_{i}.py": f"def f{i}():\n    return {i}\n" * 20 for i in range(50)}
    )
    context.messages.add(
        [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i} about topic {i % 97}",
            }
            for i in range(messages)
        ]
    )
    return context


def timed(function, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    small, large = context_with(1_000), context_with(10_000)
    small_time = timed(small.build, 200)
    large_time = timed(large.build, 50)
    print(f"build()  1,000 messages: {small_time * 1e3:7.3f} ms")
    print(f"build() 10,000 messages: {large_time * 1e3:7.3f} ms  ({large_time / small_time:.1f}x)")
    conversation = large.messages
    search_time = timed(lambda: conversation.search("topic 42"), 50)
    print(f"search over 10,000 messages: {search_time * 1e3:7.3f} ms")
    ratio = large_time / small_time
    print("linear" if ratio <= 12 else "NOT linear", f"(limit 12x, measured {ratio:.1f}x)")


if __name__ == "__main__":
    main()
