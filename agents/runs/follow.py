"""Following a run another process holds, from a sequence number (an SSE stream's half of the
relay): live frames through this process's relay channel, what was missed replayed to a
channel of the follower's own."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from channels.layers import get_channel_layer

from .fanout import spawn
from .groups import join_group
from .interruptions import ends_interrupted, renumbered
from .relay import REPLAY_SECONDS, TERMINAL, Relay

__all__ = ["follow_remote"]

logger = logging.getLogger(__name__)


async def follow_remote(
    relay: Relay,
    *,
    run_id: int,
    conversation_id: str,
    after: int,
    settled: Callable[[], Awaitable[bool]],
) -> AsyncIterator[dict[str, Any]]:
    """The run's frames after ``after`` from the process that holds it.

    Live frames come through this process's relay channel, replays of what was missed to a
    channel of the follower's own. Ends after the run's last frame, or when ``settled()`` says
    the run is over without one reaching here (its owner died, or it settled between two
    asks): the caller then replays what is left from the database.
    """
    layer = get_channel_layer()
    arrived: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()

    async def live(frame: dict[str, Any]) -> None:
        arrived.put_nowait([frame])

    unsubscribe = relay.fanout.subscribe(conversation_id, live)
    unfollow = await relay.follow(conversation_id)
    reply = await layer.new_channel()
    replays = spawn(_replays(layer, reply, arrived))
    inbox = await relay.channel()
    seq = after
    held: dict[int, dict[str, Any]] = {}

    async def ask() -> None:
        await layer.group_send(
            join_group(conversation_id),
            {
                "type": "run.replay",
                "conversation": conversation_id,
                "origin": relay.origin,
                "reply": reply,
                "inbox": inbox,
                "run": run_id,
                "after": seq,
            },
        )

    try:
        await ask()
        while True:
            try:
                frames = await asyncio.wait_for(arrived.get(), REPLAY_SECONDS)
            except TimeoutError:
                if await settled():
                    return
                await ask()
                continue
            for frame in frames:
                number = frame.get("seq")
                if frame.get("run") != run_id or not isinstance(number, int):
                    continue
                if ends_interrupted(frame):
                    # Its process died: what it sent after its last store died with it, and
                    # this follower may have seen some. Its end is the next frame here.
                    while seq + 1 in held:
                        seq += 1
                        yield held.pop(seq)
                    yield renumbered(frame, seq + 1)
                    return
                if number > seq:
                    held[number] = frame
            while seq + 1 in held:
                frame = held.pop(seq + 1)
                seq += 1
                yield frame
                if frame.get("type") in TERMINAL:
                    return
            if held and arrived.empty():
                await ask()  # a frame between ``seq`` and the held ones never came
    finally:
        unsubscribe()
        replays.cancel()
        try:
            await unfollow()
        except Exception:  # noqa: BLE001 - a stale membership expires with the layer's TTL
            logger.warning("unfollowing the run failed", exc_info=True)


async def _replays(layer: Any, channel: str, into: asyncio.Queue[list[dict[str, Any]]]) -> None:
    """A follower's replay answers, into the queue its live frames arrive in."""
    while True:
        message = await layer.receive(channel)
        if message.get("type") == "run.frames":
            into.put_nowait(list(message.get("frames") or ()))
