"""The cross-process relay: a run's frames between the process that runs it and the others.

Both halves live here. The owner's half (``Relay``) batches frames onto the shared channel
layer, publishes deltas only while another process listens (after a probe and a short grace
period), and answers other processes' requests about its runs: a snapshot (a socket joining
mid-run), a replay from a sequence number (an SSE follower), a cancel. The follower's half
(``follow_remote``, ``remote_snapshot``, ``listening``) asks for those.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Protocol

from channels.layers import get_channel_layer

from orkestrel.protocol import RunSnapshot

from .active import ActiveRun
from .fanout import spawn
from .groups import group_name, is_shared, join_group
from .timings import RunTimings

__all__ = [
    "DELTAS",
    "REPLAY_SECONDS",
    "Relay",
    "RunsView",
    "follow_remote",
    "listening",
    "remote_snapshot",
]

logger = logging.getLogger(__name__)

# The frames that are most of the traffic; every other kind is rare and always shared.
DELTAS = frozenset({"token", "think", "tool_call"})
# How long a follower waits for a frame before it asks again (and checks the run settled).
REPLAY_SECONDS = 2.0
TERMINAL = frozenset({"finish", "error"})


class RunsView(Protocol):
    """What the relay needs of the run manager: its runs, and stopping one."""

    def active(self, conversation_id: str) -> ActiveRun | None: ...

    def abort(self, conversation_id: str, reason: str = ...) -> bool: ...


# -- the owner's half -------------------------------------------------------------------------


class Relay:
    """This process's side of the shared layer for the runs it holds."""

    def __init__(self, runs: RunsView, *, origin: str, timings: RunTimings) -> None:
        self.runs = runs
        self.origin = origin
        self.timings = timings
        # Frames waiting for the shared layer, by conversation, and the task that sends them.
        self._remote: dict[str, list[dict[str, Any]]] = {}
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        # Conversations a socket of another process listens to, and the probe's grace periods.
        self._listened: set[str] = set()
        self._grace: dict[str, float] = {}
        # Layer chores in flight (announcing and leaving), held so they are not collected.
        self._tasks: set[asyncio.Task[None]] = set()
        # This process's channel on the shared layer, for requests about its runs.
        self._control: str | None = None
        self._control_task: asyncio.Task[None] | None = None

    @property
    def shared(self) -> bool:
        """Whether the channel layer reaches other processes."""
        return is_shared(get_channel_layer())

    def share(self, conversation_id: str, kind: str) -> bool:
        """Whether a frame of ``kind`` goes to other processes (decided when it is published)."""
        if not self.shared:
            return False
        if kind not in DELTAS or conversation_id in self._listened:
            return True
        grace = self._grace.get(conversation_id)
        return grace is not None and time.monotonic() < grace

    def forward(self, conversation_id: str, frame: dict[str, Any]) -> None:
        """Queue ``frame`` for the shared layer (sent in batches, never in a socket's way)."""
        self._remote.setdefault(conversation_id, []).append(frame)
        self._wake.set()
        if self._sender is None or self._sender.done():
            self._sender = spawn(self._send())

    async def _send(self) -> None:
        """Send frames to other processes in batches, one message per conversation per wake."""
        layer = get_channel_layer()
        while True:
            await self._wake.wait()
            self._wake.clear()
            batches, self._remote = self._remote, {}
            pending = list(batches.items())
            # A bounded number in flight: each concurrent send holds a pooled connection, and
            # a burst of new connections costs the loop more than waiting for a few round trips.
            step = self.timings.relay_sends
            for start in range(0, len(pending), step):
                sends = [
                    layer.group_send(
                        group_name(conversation_id),
                        {"type": "run.frames", "origin": self.origin, "frames": frames},
                    )
                    for conversation_id, frames in pending[start : start + step]
                ]
                for outcome in await asyncio.gather(*sends, return_exceptions=True):
                    if isinstance(outcome, Exception):
                        logger.warning("channel layer publish failed: %s", outcome)

    def announce(self, active: ActiveRun) -> None:
        """Tell other processes about a new run, without holding up its start.

        The grace period starts now, so no delta is held back from a listener that has not
        answered yet, and starts again once the probe is out; the layer's round trips happen
        in the background.
        """
        if not self.shared:
            return
        self._grace[active.conversation_id] = time.monotonic() + self.timings.listen_grace
        self._background(self._listen_and_probe(active))

    def released(self, conversation_id: str) -> None:
        """The conversation's run settled: forget who listened, leave its join group."""
        self._listened.discard(conversation_id)
        self._grace.pop(conversation_id, None)
        if self._control is not None:
            self._background(self._leave(conversation_id))

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = spawn(work)
        # The loop keeps only a weak reference to a task: hold it until it is done.
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _listen_and_probe(self, active: ActiveRun) -> None:
        conversation_id = active.conversation_id
        layer = get_channel_layer()
        # Answer requests about this run from sockets and followers in other processes.
        try:
            if self._control is None:
                self._control = await layer.new_channel()
                self._control_task = spawn(self._answer(layer))
            await layer.group_add(join_group(conversation_id), self._control)
        except Exception:  # noqa: BLE001 - a flaky layer must not stop the run (joins time out)
            logger.warning("channel layer join group failed", exc_info=True)
        if self.runs.active(conversation_id) is not active:
            # Released meanwhile, perhaps before the add landed.
            await self._leave(conversation_id)
            return
        # Ask the conversation's sockets in other processes to say they listen.
        try:
            await layer.group_send(
                group_name(conversation_id),
                {
                    "type": "run.probe",
                    "conversation": conversation_id,
                    "origin": self.origin,
                    "reply": self._control,
                },
            )
        except Exception:  # noqa: BLE001 - unsure who listens: publish everything
            logger.warning("channel layer probe failed", exc_info=True)
            if self.runs.active(conversation_id) is active:
                self._listened.add(conversation_id)
            return
        if self.runs.active(conversation_id) is active:
            self._grace[conversation_id] = time.monotonic() + self.timings.listen_grace

    async def _leave(self, conversation_id: str) -> None:
        """Stop answering requests for the conversation, unless a run is on it again (a newer
        run needs the same membership)."""
        if self._control is None or self.runs.active(conversation_id) is not None:
            return
        try:
            await get_channel_layer().group_discard(join_group(conversation_id), self._control)
        except Exception:  # noqa: BLE001 - a stale entry is ignored by ``_answer`` and expires
            logger.warning("channel layer leave group failed", exc_info=True)

    async def _answer(self, layer: Any) -> None:
        channel = self._control
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a flaky layer must not end the listener
                logger.warning("channel layer receive failed", exc_info=True)
                await asyncio.sleep(1)
                continue
            kind, conversation_id = message.get("type"), str(message.get("conversation"))
            active = self.runs.active(conversation_id)
            if active is None or message.get("origin") == self.origin:
                continue
            if kind in ("run.listen", "run.join", "run.replay"):
                self._listened.add(conversation_id)
            try:
                await self._reply(layer, kind, message, active)
            except Exception:  # noqa: BLE001 - the asker times out and falls back
                logger.warning("answering %s failed", kind, exc_info=True)

    async def _reply(
        self, layer: Any, kind: object, message: dict[str, Any], active: ActiveRun
    ) -> None:
        if kind == "run.join":
            await layer.send(
                message["reply"], {"type": "run.snapshot", "snapshot": active.snapshot()}
            )
        elif kind == "run.replay" and message.get("run") == active.run_id:
            after = message.get("after")
            start = after if isinstance(after, int) and after > 0 else 0
            active.flush()
            await layer.send(
                message["reply"], {"type": "run.frames", "frames": active.frames[start:]}
            )
        elif kind == "run.cancel" and message.get("run") == active.run_id:
            reason = str(message.get("reason") or "stopped by user")
            self.runs.abort(active.conversation_id, reason)


# -- the follower's half ----------------------------------------------------------------------


def listening(conversation_id: str, origin: str) -> dict[str, Any]:
    """The message a socket sends the run's process: it listens to the conversation."""
    return {"type": "run.listen", "conversation": conversation_id, "origin": origin}


async def remote_snapshot(
    layer: Any, *, origin: str, conversation_id: str, wait: float
) -> RunSnapshot | None:
    """Ask the process running the conversation's answer for its in-flight snapshot (waiting
    ``wait`` seconds at most)."""
    reply = await layer.new_channel()
    await layer.group_send(
        join_group(conversation_id),
        {"type": "run.join", "conversation": conversation_id, "origin": origin, "reply": reply},
    )
    try:
        message = await asyncio.wait_for(layer.receive(reply), wait)
    except TimeoutError:
        return None
    snapshot: RunSnapshot | None = message.get("snapshot")
    return snapshot


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
