"""The cross-process relay: a run's frames between the process that runs it and the others.

Every process has one relay channel on the shared layer (``Relay.channel``). The owner's half
batches a run's frames onto the layer each tick (``routes``: one message per listening process,
carrying every conversation it follows; the conversation's group while nobody is known to
listen), publishes deltas only while another process listens (after a probe and a short grace
period), and answers other processes' requests about its runs: a snapshot (a socket joining
mid-run), a replay from a sequence number (an SSE follower, ``follow``), a cancel, an answer
to a server's request for the user's input (``inputs``). The
follower's half (``Relay.follow``, ``Relay.snapshot``) joins the groups of the conversations
this process's sockets and streams follow, says it listens, and fans the frames it receives
out to them locally.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from orkestrel.protocol import RunSnapshot

from .active import ActiveRun
from .fanout import FanOut, spawn
from .groups import group_name, is_shared, join_group
from .inputs import RESPOND, answered_here
from .routes import DELTAS, Routes
from .timings import RunTimings

__all__ = [
    "DELTAS",
    "REPLAY_SECONDS",
    "Relay",
    "TERMINAL",
    "RunsView",
    "listening",
]

logger = logging.getLogger(__name__)

# How long a follower waits for a frame before it asks again (and checks the run settled).
REPLAY_SECONDS = 2.0
TERMINAL = frozenset({"finish", "error"})


class RunsView(Protocol):
    """What the relay needs of the run manager: its runs, and stopping one."""

    def active(self, conversation_id: str) -> ActiveRun | None: ...

    def abort(self, conversation_id: str, reason: str = ...) -> bool: ...


def listening(conversation_id: str, origin: str, channel: str) -> dict[str, Any]:
    """The message a process sends the run's process: ``channel`` listens to the
    conversation."""
    return {
        "type": "run.listen",
        "conversation": conversation_id,
        "origin": origin,
        "inbox": channel,
    }


class Relay:
    """This process's side of the shared layer: for the runs it holds, and for its followers
    of runs held elsewhere (``fanout``: its local subscribers)."""

    def __init__(
        self,
        runs: RunsView,
        fanout: FanOut,
        *,
        origin: str,
        timings: RunTimings,
        share_all: bool = False,
    ) -> None:
        self.runs = runs
        self.fanout = fanout
        self.origin = origin
        self.timings = timings
        # A worker's runs have no socket in their own process: every frame goes to the layer
        # (a follower that answered the probe late would see gaps until it resynced).
        self.share_all = share_all
        # Frames waiting for the shared layer, by conversation, and the task that sends them.
        self._remote: dict[str, list[dict[str, Any]]] = {}
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        # The processes listening to each conversation run here, and the probes' grace periods.
        self._routes = Routes()
        self._grace: dict[str, float] = {}
        # Layer chores in flight (announcing and leaving), held so they are not collected.
        self._tasks: set[asyncio.Task[None]] = set()
        # This process's channel on the shared layer (requests about its runs, frames of the
        # runs it follows), the layer it is on and the task reading it.
        self._channel: str | None = None
        self._layer: Any = None
        self._receiver: asyncio.Task[None] | None = None
        # Local followers by conversation (sockets and streams of runs held elsewhere).
        self._followers: dict[str, int] = {}
        # The layer messages this process's relay channel took, by type (tests, benchmarks).
        self.received: Counter[str] = Counter()

    @property
    def shared(self) -> bool:
        """Whether the channel layer reaches other processes."""
        return is_shared(get_channel_layer())

    async def channel(self) -> str:
        """This process's relay channel on the shared layer (opened, and read, on first use;
        again on a new layer or loop)."""
        layer = get_channel_layer()
        receiver = self._receiver
        if (
            self._channel is None
            or self._layer is not layer
            or receiver is None
            or receiver.done()
            or receiver.get_loop() is not asyncio.get_running_loop()
        ):
            if receiver is not None and not receiver.done():
                receiver.cancel()
            channel = await layer.new_channel()
            self._channel, self._layer = channel, layer
            self._receiver = spawn(self._receive(layer, channel))
        return self._channel

    # -- the owner's half ---------------------------------------------------------------------

    def share(self, conversation_id: str, kind: str) -> bool:
        """Whether a frame of ``kind`` goes to other processes (decided when it is published)."""
        if not self.shared:
            return False
        if self.share_all or kind not in DELTAS or self._routes.listened(conversation_id):
            return True
        return self._in_grace(conversation_id)

    def _in_grace(self, conversation_id: str) -> bool:
        grace = self._grace.get(conversation_id)
        return grace is not None and time.monotonic() < grace

    def forward(self, conversation_id: str, frame: dict[str, Any]) -> None:
        """Queue ``frame`` for the shared layer (sent in batches, never in a socket's way)."""
        self._remote.setdefault(conversation_id, []).append(frame)
        sender = self._sender
        if sender is None or sender.done() or sender.get_loop() is not asyncio.get_running_loop():
            # An event binds to the loop that first waits on it: a new loop needs a new one.
            self._wake = asyncio.Event()
            self._sender = spawn(self._send())
        self._wake.set()

    async def _send(self) -> None:
        """Send frames to other processes each tick: one message per listening process, and
        one per conversation that goes to its group (``Routes.plan``)."""
        layer = get_channel_layer()
        while True:
            await self._wake.wait()
            if self.timings.relay_batch > 0:
                await asyncio.sleep(self.timings.relay_batch)
            self._wake.clear()
            pending, self._remote = self._remote, {}
            # Routed now, not when queued: a process that said it listens meanwhile is served.
            plan = self._routes.plan(pending, self._in_grace)
            # (process channel, or None for a group; where; the message)
            sends: list[tuple[str | None, str, dict[str, Any]]] = [
                (
                    None,
                    group_name(conversation_id),
                    {
                        "type": "run.frames",
                        "origin": self.origin,
                        "conversation": conversation_id,
                        "frames": frames,
                    },
                )
                for conversation_id, frames in plan.groups.items()
            ]
            sends += [
                (channel, channel, {"type": "run.batch", "origin": self.origin, "frames": batch})
                for channel, batch in plan.batches.items()
            ]
            # A bounded number in flight: each concurrent send holds a pooled connection, and
            # a burst of new connections costs the loop more than waiting for a few round trips.
            step = self.timings.relay_sends
            for start in range(0, len(sends), step):
                chunk = sends[start : start + step]
                outcomes = await asyncio.gather(
                    *(
                        layer.group_send(to, message)
                        if channel is None
                        else layer.send(to, message)
                        for channel, to, message in chunk
                    ),
                    return_exceptions=True,
                )
                for (channel, _, _), outcome in zip(chunk, outcomes, strict=True):
                    if isinstance(outcome, ChannelFull) and channel is not None:
                        # Nobody reads it (its process died): stop sending there. A live one
                        # sees a gap once it is counted again, and resyncs.
                        logger.warning("relay channel %s is full: dropped", channel)
                        self._routes.drop(channel)
                    elif isinstance(outcome, Exception):
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
        self.background(self._listen_and_probe(active))

    def released(self, conversation_id: str) -> None:
        """The conversation's run settled: forget who listened, leave its join group."""
        self._routes.forget(conversation_id)
        self._grace.pop(conversation_id, None)
        if self._channel is not None:
            self.background(self._leave(conversation_id))

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a layer chore without holding up the caller (held until it is done)."""
        task = spawn(work)
        # The loop keeps only a weak reference to a task: hold it until it is done.
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _listen_and_probe(self, active: ActiveRun) -> None:
        conversation_id = active.conversation_id
        layer = get_channel_layer()
        # Answer requests about this run from sockets and followers in other processes.
        try:
            channel = await self.channel()
            await layer.group_add(join_group(conversation_id), channel)
        except Exception:  # noqa: BLE001 - a flaky layer must not stop the run (joins time out)
            logger.warning("channel layer join group failed", exc_info=True)
            return
        if self.runs.active(conversation_id) is not active:
            # Released meanwhile, perhaps before the add landed.
            await self._leave(conversation_id)
            return
        # Ask the processes following the conversation to say they listen.
        try:
            await layer.group_send(
                group_name(conversation_id),
                {
                    "type": "run.probe",
                    "conversation": conversation_id,
                    "origin": self.origin,
                    "reply": channel,
                },
            )
        except Exception:  # noqa: BLE001 - unsure who listens: the group gets everything
            logger.warning("channel layer probe failed", exc_info=True)
            if self.runs.active(conversation_id) is active:
                self._grace[conversation_id] = float("inf")
            return
        if self.runs.active(conversation_id) is active:
            self._grace[conversation_id] = time.monotonic() + self.timings.listen_grace

    async def _leave(self, conversation_id: str) -> None:
        """Stop answering requests for the conversation, unless a run is on it again (a newer
        run needs the same membership)."""
        if self._channel is None or self.runs.active(conversation_id) is not None:
            return
        try:
            await get_channel_layer().group_discard(join_group(conversation_id), self._channel)
        except Exception:  # noqa: BLE001 - a stale entry is ignored by ``_receive`` and expires
            logger.warning("channel layer leave group failed", exc_info=True)

    async def _receive(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a flaky layer must not end the listener
                logger.warning("channel layer receive failed", exc_info=True)
                await asyncio.sleep(1)
                continue
            if message.get("origin") == self.origin:
                continue  # this process's own frames and probes, back through a group
            kind = message.get("type")
            self.received[str(kind)] += 1
            try:
                if kind == "run.batch":
                    for conversation_id, frames in message["frames"].items():
                        self._arrived(conversation_id, frames)
                elif kind == "run.frames":
                    self._arrived(str(message.get("conversation")), message["frames"])
                elif kind == "run.probe":
                    await self._answer_probe(layer, message)
                else:
                    await self._request(layer, kind, message)
            except Exception:  # noqa: BLE001 - the asker times out and falls back
                logger.warning("handling %s failed", kind, exc_info=True)

    async def _request(self, layer: Any, kind: object, message: dict[str, Any]) -> None:
        active = self.runs.active(str(message.get("conversation")))
        if active is None:
            return
        inbox = message.get("inbox")
        if kind in ("run.listen", "run.join", "run.replay") and isinstance(inbox, str):
            self._routes.add(active.conversation_id, inbox)
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
        elif kind == "run.cancel" and message.get("run") in (None, active.run_id):
            # Without a run: the conversation's stop button (its run is on a worker).
            reason = str(message.get("reason") or "stopped by user")
            self.runs.abort(active.conversation_id, reason)
        elif kind == RESPOND and isinstance(message.get("reply"), str):
            answered = answered_here(active, message)
            if answered is not None:
                await layer.send(message["reply"], answered)

    # -- the follower's half ------------------------------------------------------------------

    def _arrived(self, conversation_id: str, frames: list[dict[str, Any]]) -> None:
        """Frames of a run held elsewhere: to this process's followers of the conversation."""
        if self._followers.get(conversation_id):
            for frame in frames:
                self.fanout.publish(conversation_id, frame, False)

    async def _answer_probe(self, layer: Any, message: dict[str, Any]) -> None:
        """A run started elsewhere asks who listens: this process does, if it follows it."""
        conversation_id = str(message.get("conversation"))
        if self._followers.get(conversation_id) and message.get("reply"):
            await layer.send(
                message["reply"], listening(conversation_id, self.origin, await self.channel())
            )

    async def follow(self, conversation_id: str) -> Callable[[], Awaitable[None]]:
        """Receive the conversation's frames from the process running it, whichever it is
        (for this process's subscribers of it); returns the awaitable unfollow."""
        layer = get_channel_layer()
        channel = await self.channel()
        self._followers[conversation_id] = self._followers.get(conversation_id, 0) + 1
        await layer.group_add(group_name(conversation_id), channel)
        # A run going on now publishes its deltas only to the processes that said they listen.
        await layer.group_send(
            join_group(conversation_id), listening(conversation_id, self.origin, channel)
        )
        done = False

        async def unfollow() -> None:
            nonlocal done
            if done:
                return
            done = True
            left = self._followers.get(conversation_id, 1) - 1
            if left > 0:
                self._followers[conversation_id] = left
                return
            self._followers.pop(conversation_id, None)
            try:
                await layer.group_discard(group_name(conversation_id), channel)
                if self._followers.get(conversation_id):
                    # Followed again while leaving: the discard may have landed after its add.
                    await layer.group_add(group_name(conversation_id), channel)
            except Exception:  # noqa: BLE001 - a stale membership is ignored and expires
                logger.warning("leaving the conversation's group failed", exc_info=True)

        return unfollow

    async def snapshot(self, conversation_id: str, *, wait: float) -> RunSnapshot | None:
        """Ask the process running the conversation's answer for its in-flight snapshot
        (waiting ``wait`` seconds at most); it then counts this process as listening."""
        layer = get_channel_layer()
        reply = await layer.new_channel()
        await layer.group_send(
            join_group(conversation_id),
            {
                "type": "run.join",
                "conversation": conversation_id,
                "origin": self.origin,
                "reply": reply,
                "inbox": await self.channel(),
            },
        )
        try:
            message = await asyncio.wait_for(layer.receive(reply), wait)
        except TimeoutError:
            return None
        snapshot: RunSnapshot | None = message.get("snapshot")
        return snapshot
