"""Following a run that another process holds, through the shared channel layer.

The follower joins the conversation's group (where the owner publishes the run's frames), then
asks the owner (through the conversation's join group) to replay the frames after ``seq``; the
owner starts sharing every frame of the run from then on. Frames are put back in ``seq`` order
and each is yielded once; a gap (a frame the layer dropped) asks for a replay again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .groups import group_name, join_group

__all__ = ["REPLAY_SECONDS", "follow_remote"]

logger = logging.getLogger(__name__)

# How long the follower waits for a frame before it asks again (and checks the run settled).
REPLAY_SECONDS = 2.0
TERMINAL = frozenset({"finish", "error"})


async def follow_remote(
    layer: Any,
    *,
    origin: str,
    run_id: int,
    conversation_id: str,
    after: int,
    settled: Callable[[], Awaitable[bool]],
) -> AsyncIterator[dict[str, Any]]:
    """The run's frames after ``after`` from the process that holds it.

    Ends after the run's last frame, or when ``settled()`` says the run is over without one
    reaching here (its owner died, or it settled between two asks): the caller then replays
    what is left from the database.
    """
    channel = await layer.new_channel()
    group = group_name(conversation_id)
    await layer.group_add(group, channel)
    seq = after
    held: dict[int, dict[str, Any]] = {}

    async def ask() -> None:
        await layer.group_send(
            join_group(conversation_id),
            {
                "type": "run.replay",
                "conversation": conversation_id,
                "origin": origin,
                "reply": channel,
                "run": run_id,
                "after": seq,
            },
        )

    try:
        await ask()
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), REPLAY_SECONDS)
            except TimeoutError:
                if await settled():
                    return
                await ask()
                continue
            if message.get("type") != "run.frames":
                continue
            for frame in message.get("frames") or ():
                number = frame.get("seq")
                if frame.get("run") == run_id and isinstance(number, int) and number > seq:
                    held[number] = frame
            while seq + 1 in held:
                frame = held.pop(seq + 1)
                seq += 1
                yield frame
                if frame.get("type") in TERMINAL:
                    return
            if held:
                await ask()  # a frame between ``seq`` and the held ones never came
    finally:
        try:
            await layer.group_discard(group, channel)
        except Exception:  # noqa: BLE001 - a stale membership expires with the layer's TTL
            logger.warning("leaving the run's group failed", exc_info=True)
