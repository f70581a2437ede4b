"""Local fan-out: frames reach this process's subscribers, in whichever event loop runs now."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.runs.fanout import FanOut


def _deliver_once(fanout: FanOut, loop: asyncio.AbstractEventLoop) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []

    async def subscriber(frame: dict[str, Any]) -> None:
        got.append(frame)

    async def publish() -> None:
        unsubscribe = fanout.subscribe("c1", subscriber)
        fanout.publish("c1", {"type": "token", "seq": 1}, share=False)
        await fanout.drain()
        unsubscribe()

    loop.run_until_complete(publish())
    return got


def _close(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.close()


def test_a_fan_out_left_by_another_loop_delivers_in_the_running_one():
    # The first loop's delivery task still waits on its queue (a test's loop that was closed
    # never ends it): the next loop must get a queue and a task of its own.
    fanout = FanOut(forward=lambda conversation_id, frame: None)
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        assert _deliver_once(fanout, first) == [{"type": "token", "seq": 1}]
        assert _deliver_once(fanout, second) == [{"type": "token", "seq": 1}]
    finally:
        _close(second)
        _close(first)
