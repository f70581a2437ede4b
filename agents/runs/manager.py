"""The run manager: every run of this process, its frame delivery and its checkpoints."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from channels.layers import get_channel_layer

from orkestrel.core import Message, mint_id
from orkestrel.db import in_thread

from ..runtime.session import ChatSession
from ..runtime.summarizer import make_summarizer
from .active import ActiveRun
from .groups import group_name, is_shared, join_group
from .payloads import section_payload
from .records import prepare_run, save_checkpoints, save_events

__all__ = [
    "CHECKPOINT_SECONDS",
    "DELTAS",
    "LISTEN_GRACE_SECONDS",
    "MANUAL_KEEP",
    "Busy",
    "RunManager",
    "run_manager",
]

logger = logging.getLogger(__name__)

CHECKPOINT_SECONDS = 1.0
MANUAL_KEEP = 2
# A new run publishes its deltas to the shared layer for this long whatever it hears, from its
# start and again once its probe is out: enough for idle sockets of other processes to answer
# the probe (milliseconds), short enough that a burst of starts does not publish every delta
# of its first second to processes that do not listen (`bench/README.md`). After it, only the
# deltas of runs another process listens to are published; every other frame always is, so a
# listener that answered late (a socket still joining waits up to 2 s) sees a gap at the next
# one and resyncs, which registers it.
LISTEN_GRACE_SECONDS = 0.25
# Group sends to the shared layer in flight at once (per process).
RELAY_SENDS = 32
# The frames that are most of the traffic; every other kind is rare and always shared.
DELTAS = frozenset({"token", "think"})
# Settled runs kept in memory for followers while their frames are being stored (and a while
# after: a follower that reconnects at once replays from memory, not from the database).
RECENT_RUNS = 256
Subscriber = Callable[[dict[str, Any]], Awaitable[None]]


def spawn[T](work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task of the manager's, in a context of its own.

    A run may start inside a sync view's ``async_to_sync`` call, whose context routes database
    hops to that request's thread; the run outlives the request, so its hops must go to the
    server's shared database thread instead, as they do for a run the websocket started.
    """
    return asyncio.get_running_loop().create_task(work, context=contextvars.Context())


class Busy(RuntimeError):
    """A run is already streaming on this conversation."""


class RunManager:
    """Every run of this process, keyed by conversation; at most one run per conversation."""

    def __init__(self, *, origin: str | None = None) -> None:
        self.origin = origin or uuid.uuid4().hex
        self._runs: dict[str, ActiveRun] = {}
        # The same runs by run id, and the most recently settled ones (oldest first).
        self._by_run: dict[int, ActiveRun] = {}
        self._recent: dict[int, ActiveRun] = {}
        self._starting: set[str] = set()
        self._subscribers: dict[str, set[Subscriber]] = {}
        self._outbox: asyncio.Queue[tuple[str, dict[str, Any], bool]] | None = None
        self._publisher: asyncio.Task[None] | None = None
        # One task saves every active run's in-flight text each second, in one statement.
        self._checkpointer: asyncio.Task[None] | None = None
        self._saving: asyncio.Future[None] | None = None
        # Frames waiting for the shared layer, by conversation, and the task that sends them.
        self._remote: dict[str, list[dict[str, Any]]] = {}
        # Conversations a socket of another process listens to, and the probe's grace periods.
        self._listened: set[str] = set()
        self._grace: dict[str, float] = {}
        # Layer chores in flight (announcing and leaving), held so they are not collected.
        self._tasks: set[asyncio.Task[None]] = set()
        self._relay_wake = asyncio.Event()
        self._relay: asyncio.Task[None] | None = None
        # This process's channel on the shared layer, for snapshot requests (joins).
        self._control: str | None = None
        self._control_task: asyncio.Task[None] | None = None

    # -- subscribers --------------------------------------------------------------------------

    def subscribe(self, conversation_id: str, subscriber: Subscriber) -> Callable[[], None]:
        """Deliver this conversation's frames to ``subscriber``; returns the unsubscribe."""
        self._subscribers.setdefault(conversation_id, set()).add(subscriber)

        def unsubscribe() -> None:
            subscribers = self._subscribers.get(conversation_id)
            if subscribers is not None:
                subscribers.discard(subscriber)
                if not subscribers:
                    del self._subscribers[conversation_id]

        return unsubscribe

    def active(self, conversation_id: str) -> ActiveRun | None:
        return self._runs.get(conversation_id)

    def run(self, run_id: int) -> ActiveRun | None:
        """The run ``run_id`` if this process runs it or settled it recently."""
        return self._by_run.get(run_id) or self._recent.get(run_id)

    def busy(self, conversation_id: str) -> bool:
        return conversation_id in self._runs or conversation_id in self._starting

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, conversation_id: str, frame: dict[str, Any]) -> None:
        """Queue ``frame`` for delivery, in order, to every socket on the conversation."""
        if self._outbox is None or self._publisher is None or self._publisher.done():
            self._outbox = asyncio.Queue()
            self._publisher = spawn(self._publish_loop())
        # Decided now, not when the publisher gets to it: by then the run may be released.
        share = frame.get("type") not in DELTAS or self._wanted(conversation_id)
        self._outbox.put_nowait((conversation_id, frame, share))

    async def _publish_loop(self) -> None:
        outbox = self._outbox
        assert outbox is not None
        shared = is_shared(get_channel_layer())
        while True:
            conversation_id, frame, share = await outbox.get()
            for subscriber in list(self._subscribers.get(conversation_id, ())):
                try:
                    await subscriber(frame)
                except Exception:  # noqa: BLE001 - one broken socket must not stop the others
                    logger.debug("dropping frame for a closed subscriber", exc_info=True)
            if shared and share:
                self._remote.setdefault(conversation_id, []).append(frame)
                self._relay_wake.set()
                if self._relay is None or self._relay.done():
                    self._relay = spawn(self._relay_loop())
            outbox.task_done()

    def _wanted(self, conversation_id: str) -> bool:
        """Whether another process may be listening (every process gets its own sends back)."""
        if conversation_id in self._listened:
            return True
        grace = self._grace.get(conversation_id)
        return grace is not None and time.monotonic() < grace

    async def _relay_loop(self) -> None:
        """Send frames to other processes in batches, one message per conversation per wake.

        Local sockets never wait for this: the shared layer is slower than a socket write.
        """
        layer = get_channel_layer()
        while True:
            await self._relay_wake.wait()
            self._relay_wake.clear()
            batches, self._remote = self._remote, {}
            pending = list(batches.items())
            # A bounded number in flight: each concurrent send holds a pooled connection, and
            # a burst of new connections costs the loop more than waiting for a few round trips.
            for start in range(0, len(pending), RELAY_SENDS):
                sends = [
                    layer.group_send(
                        group_name(conversation_id),
                        {"type": "run.frames", "origin": self.origin, "frames": frames},
                    )
                    for conversation_id, frames in pending[start : start + RELAY_SENDS]
                ]
                for outcome in await asyncio.gather(*sends, return_exceptions=True):
                    if isinstance(outcome, Exception):
                        logger.warning("channel layer publish failed: %s", outcome)

    async def drain(self) -> None:
        """Wait until every queued frame was delivered (tests and shutdown)."""
        if self._outbox is not None:
            await self._outbox.join()

    # -- runs ---------------------------------------------------------------------------------

    async def start(
        self,
        *,
        user_id: int,
        conversation_id: str,
        content: str,
        images: tuple[str, ...] = (),
        nonce: str | None = None,
    ) -> ActiveRun:
        """Persist the user message, then start a run. Raises ``Busy`` while one runs."""
        if self.busy(conversation_id):
            raise Busy("a reply is still running in this conversation")
        self._starting.add(conversation_id)
        try:
            message = Message(mint_id(), "user", content, images=images or None)
            # One database hop: load everything, make the user message durable, open the run.
            loaded, run_id, usage, user_payload, title = await in_thread(prepare_run)(
                conversation_id, user_id, message
            )
            session = await ChatSession.from_loaded(loaded)
            session.run_id = run_id
            active = ActiveRun(self, session, run_id, conversation_id)
            active.committed = {m.id for m in session.agent.context.messages.messages()}
            active.total = usage
            session.agent.context.messages.emitter.on(
                "compact",
                lambda section: active.compacted(section_payload(section)),
            )
            self._runs[conversation_id] = active
            self._by_run[run_id] = active
            if self._checkpointer is None or self._checkpointer.done():
                self._checkpointer = spawn(self._checkpoints())
            self._announce(active)
        finally:
            self._starting.discard(conversation_id)
        active.started(user_payload, nonce, title)
        active.task = spawn(active.drive())
        return active

    def abort(self, conversation_id: str, reason: str = "stopped by user") -> bool:
        """Stop the conversation's run (its partial answer is kept); whether one was running."""
        active = self._runs.get(conversation_id)
        if active is None:
            return False
        active.session.agent.abort(reason)
        return True

    async def compact(self, *, user_id: int, conversation_id: str, focus: str | None) -> Any:
        """Fold the conversation's older history now (with an optional focus)."""
        if self.busy(conversation_id):
            raise Busy("a reply is still running in this conversation")
        self._starting.add(conversation_id)
        try:
            session = await ChatSession.open(conversation_id, user_id)
            conversation = session.agent.context.messages
            if focus:
                conversation = session.conversations.add(
                    snapshot=conversation.snapshot(),
                    summarize=make_summarizer(session.agent.provider, focus),
                )
            # A manual fold keeps only the latest exchange verbatim: the user asked for room.
            section = await conversation.compact(keep=MANUAL_KEEP)
            if section is not None:
                await session.conversations.save(conversation_id)
            return section
        finally:
            self._starting.discard(conversation_id)

    async def _checkpoints(self) -> None:
        """Every ``CHECKPOINT_SECONDS``, save the in-flight text of every active run.

        A crash loses at most that much of an answer; one statement for all runs keeps the
        database thread (and the GIL) out of the streams' way.
        """
        while self._runs:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            rows = [row for active in list(self._runs.values()) if (row := active.checkpoint())]
            if not rows:
                continue
            self._saving = asyncio.ensure_future(in_thread(save_checkpoints)(rows))
            try:
                await self._saving
            except Exception:  # noqa: BLE001 - a failed checkpoint must not stop the next
                logger.warning("saving run checkpoints failed", exc_info=True)

    async def checkpoints_done(self) -> None:
        """Wait for a checkpoint write in flight, if any."""
        if self._saving is not None and not self._saving.done():
            await asyncio.gather(self._saving, return_exceptions=True)

    def release(self, conversation_id: str, active: ActiveRun) -> None:
        if self._by_run.pop(active.run_id, None) is active:
            self._recent[active.run_id] = active
            while len(self._recent) > RECENT_RUNS:
                del self._recent[next(iter(self._recent))]
        if self._runs.get(conversation_id) is active:
            del self._runs[conversation_id]
            self._listened.discard(conversation_id)
            self._grace.pop(conversation_id, None)
            if self._control is not None:
                self._background(self._leave(conversation_id))

    async def store_events(self, active: ActiveRun) -> None:
        """Store a settled run's frames (the end of its task, after its slot was released)."""
        try:
            await in_thread(save_events)(active.run_id, active.frames)
        except Exception:  # noqa: BLE001 - replay from the database is lost, the run is not
            logger.warning("storing the frames of run %s failed", active.run_id, exc_info=True)

    # -- joins from other processes -----------------------------------------------------------

    def _announce(self, active: ActiveRun) -> None:
        """Tell other processes about the new run, without holding up its start.

        The grace period starts now, so no delta is held back from a listener that has not
        answered yet, and starts again once the probe is out; the layer's round trips happen
        in the background.
        """
        if not is_shared(get_channel_layer()):
            return
        self._grace[active.conversation_id] = time.monotonic() + LISTEN_GRACE_SECONDS
        self._background(self._listen_and_probe(active))

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = spawn(work)
        # The loop keeps only a weak reference to a task: hold it until it is done.
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _listen_and_probe(self, active: ActiveRun) -> None:
        conversation_id = active.conversation_id
        layer = get_channel_layer()
        # Answer snapshot requests for this run from sockets in other processes.
        try:
            if self._control is None:
                self._control = await layer.new_channel()
                self._control_task = spawn(self._answer(layer))
            await layer.group_add(join_group(conversation_id), self._control)
        except Exception:  # noqa: BLE001 - a flaky layer must not stop the run (joins time out)
            logger.warning("channel layer join group failed", exc_info=True)
        if self._runs.get(conversation_id) is not active:
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
            if self._runs.get(conversation_id) is active:
                self._listened.add(conversation_id)
            return
        if self._runs.get(conversation_id) is active:
            self._grace[conversation_id] = time.monotonic() + LISTEN_GRACE_SECONDS

    async def _leave(self, conversation_id: str) -> None:
        """Stop answering snapshot requests for the conversation, unless a run is on it again
        (a newer run needs the same membership)."""
        if self._control is None or conversation_id in self._runs:
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
            active = self._runs.get(conversation_id)
            if active is None or message.get("origin") == self.origin:
                continue
            if kind in ("run.listen", "run.join", "run.replay"):
                self._listened.add(conversation_id)
            try:
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
                    self.abort(conversation_id, str(message.get("reason") or "stopped by user"))
            except Exception:  # noqa: BLE001 - the asker times out and falls back
                logger.warning("answering %s failed", kind, exc_info=True)

    async def wait(self, conversation_id: str) -> None:
        """Wait for the conversation's run (if any) to settle."""
        active = self._runs.get(conversation_id)
        if active is not None and active.task is not None:
            await asyncio.shield(active.task)


run_manager = RunManager()
