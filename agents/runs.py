"""The run manager: runs belong to the server process, not to a socket.

A run is an asyncio task that drives one conversation's agent, coalesces its output into
numbered frames, delivers them to every socket on the conversation (directly in this
process; through the channel layer to other processes when the layer is shared), commits
each finished message at once and checkpoints the in-flight answer at least every second.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from conversations.models import Conversation, Run
from conversations.stores import DjangoConversationStore
from orkestrel.core import (
    AgentResult,
    Message,
    ThinkChunk,
    TokenChunk,
    TokenUsage,
    ToolChunk,
    UsageChunk,
    create_conversation,
    mint_id,
)

from .frames import result_payload, tool_payload
from .runtime.session import ChatSession, LoadedSession, load_session
from .runtime.summarizer import make_summarizer

__all__ = [
    "CHECKPOINT_SECONDS",
    "TICK_SECONDS",
    "ActiveRun",
    "Busy",
    "RunManager",
    "group_name",
    "join_group",
    "is_shared",
    "recover_interrupted",
    "section_payload",
    "run_manager",
]

logger = logging.getLogger(__name__)

TICK_SECONDS = 0.03
CHECKPOINT_SECONDS = 1.0
MANUAL_KEEP = 2
TITLE_LENGTH = 60
Subscriber = Callable[[dict[str, Any]], Awaitable[None]]


def is_shared(layer: Any) -> bool:
    """Whether ``layer`` reaches other processes (the in-memory layer does not)."""
    return layer is not None and type(layer).__name__ != "InMemoryChannelLayer"


def group_name(conversation_id: str) -> str:
    """The channel-layer group of one conversation's sockets."""
    return f"conversation.{conversation_id}"


def join_group(conversation_id: str) -> str:
    """The group of the process running the conversation's answer (snapshot requests)."""
    return f"conversation.{conversation_id}.join"


class Busy(RuntimeError):
    """A run is already streaming on this conversation."""


@dataclass
class ActiveRun:
    """One streaming run and what a joining client needs to catch up."""

    manager: RunManager
    session: ChatSession
    run_id: int
    conversation_id: str
    seq: int = 0
    # The in-flight answer and reasoning as parts, joined on demand (linear in length).
    answer: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    # The conversation's cumulative usage, as of the start of the run plus this run's calls.
    total: TokenUsage = field(default_factory=TokenUsage)
    _tokens: list[str] = field(default_factory=list)
    _thoughts: list[str] = field(default_factory=list)
    # What the last checkpoint saved (length of answer + reasoning), to skip unchanged runs.
    _saved: int = -1

    @property
    def content(self) -> str:
        return _joined(self.answer)

    @property
    def thinking(self) -> str:
        return _joined(self.reasoning)

    def snapshot(self) -> dict[str, Any]:
        """The in-flight answer exactly as of ``seq``.

        Buffered deltas are flushed first, so the snapshot's text and its ``seq`` agree: the
        joining client takes the text from here and every frame after ``seq`` from the stream.
        """
        self.flush()
        return {
            "id": self.run_id,
            "seq": self.seq,
            "content": self.content,
            "thinking": self.thinking,
            "tools": list(self.tools),
        }

    def emit(self, kind: str, **fields: Any) -> None:
        """Number a frame and hand it to the manager's ordered publisher."""
        if kind not in ("token", "think"):
            self.flush()
        self.seq += 1
        frame = {"type": kind, "run": self.run_id, "seq": self.seq, **fields}
        self.manager.publish(self.conversation_id, frame)

    def flush(self) -> None:
        """Send the coalesced token / think deltas as one frame each."""
        if self._thoughts:
            text = "".join(self._thoughts)
            self._thoughts.clear()
            self.seq += 1
            self.manager.publish(
                self.conversation_id,
                {"type": "think", "run": self.run_id, "seq": self.seq, "content": text},
            )
        if self._tokens:
            text = "".join(self._tokens)
            self._tokens.clear()
            self.seq += 1
            self.manager.publish(
                self.conversation_id,
                {"type": "token", "run": self.run_id, "seq": self.seq, "content": text},
            )

    async def drive(self) -> None:
        """Run the agent to its end, publishing and committing as it goes.

        Chunks are drained in batches: after a batch with text the driver sleeps one tick and
        sends what arrived meanwhile as one frame, so a fast stream costs a wake-up per tick,
        not one per delta.
        """
        session = self.session
        result: AgentResult | None = None
        error: BaseException | None = None
        try:
            stream = session.agent.stream(think=session.think)
            channel = stream.channel
            while True:
                await channel.wait()
                chunks = channel.take()
                if not chunks:
                    break
                await self._handle(chunks)
                if self._tokens or self._thoughts:
                    await asyncio.sleep(TICK_SECONDS)
                    await self._handle(channel.take())
                    self.flush()
            result = await stream.result
        except Exception as caught:
            error = caught
            logger.exception("run %s failed", self.run_id)
        finally:
            self.flush()
        await self._settle(result, error)

    async def _handle(self, chunks: list[Any]) -> None:
        for chunk in chunks:
            kind = type(chunk)
            if kind is TokenChunk:
                self.answer.append(chunk.content)
                self._tokens.append(chunk.content)
            elif kind is ThinkChunk:
                self.reasoning.append(chunk.content)
                self._thoughts.append(chunk.content)
            elif kind is ToolChunk:
                payload = tool_payload(chunk.call, chunk.result)
                self.tools.append(payload)
                self.emit("tool", **payload)
                # The assistant turn with its calls and this tool message are now final.
                await self._commit()
                self.answer.clear()
            elif kind is UsageChunk:
                self.total = self.total + chunk.usage
                self.emit(
                    "usage",
                    usage=chunk.usage.to_dict(),
                    total=self.total.to_dict(),
                    context=self._context(),
                )

    def _context(self) -> dict[str, Any]:
        from orkestrel.core import estimate_messages

        agent = self.session.agent
        used = estimate_messages(agent.context.build(agent.provider.format))
        return {"used": used, "window": self.session.spec.profile.context_window}

    async def _commit(self, usage: Any = None) -> list[dict[str, Any]]:
        before = set(self.manager.committed_ids.get(self.conversation_id, ()))
        await self.session.commit(usage)
        messages = self.session.agent.context.messages.messages()
        fresh = [m for m in messages if m.id not in before]
        self.manager.committed_ids[self.conversation_id] = {m.id for m in messages}
        if fresh:
            payload = await sync_to_async(_committed_payload)(fresh)
            self.emit("committed", messages=payload)
        return []

    def checkpoint(self) -> tuple[int, str, str] | None:
        """The in-flight text to save, or ``None`` when nothing changed since the last save."""
        content, thinking = self.content, self.thinking
        size = len(content) + len(thinking)
        if size == self._saved:
            return None
        self._saved = size
        return self.run_id, content, thinking

    async def _settle(self, result: AgentResult | None, error: BaseException | None) -> None:
        # The final write below must land after any checkpoint in flight, never before it.
        await self.manager.checkpoints_done()
        try:
            if result is not None:
                await self._commit(result.usage)
                if result.stop == "abort":
                    self.emit("abort", reason=_reason(result.reason))
                elif result.stop == "exhaust":
                    self.emit("exhaust", limit=self.session.agent.limit)
                self.emit("finish", result=result_payload(result))
                status = "done" if not result.partial else "partial"
                await sync_to_async(_finish_run)(self.run_id, status, result, "")
            else:
                await self._commit()
                message = str(error) or type(error).__name__
                self.emit("error", code="run_failed", message=message[:500])
                await sync_to_async(_finish_run)(self.run_id, "error", None, message)
        except Exception:
            logger.exception("settling run %s failed", self.run_id)
        finally:
            self.manager.release(self.conversation_id, self)


def section_payload(section: Any) -> dict[str, Any]:
    """A compacted section for the ``compaction`` frame."""
    return {
        "id": section.id,
        "summary": section.summary,
        "messages": [{"id": m.id, "role": m.role, "content": m.content} for m in section.messages],
    }


def _joined(parts: list[str]) -> str:
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""


def _reason(reason: object) -> str:
    return reason if isinstance(reason, str) else "aborted"


def _committed_payload(messages: list[Message]) -> list[dict[str, Any]]:
    from conversations.rendering import render_markdown

    return [
        {
            "id": m.id,
            "role": m.role,
            "content": m.content,
            "html": render_markdown(m.content) if m.role == "assistant" else None,
            "calls": [c.to_dict() for c in m.calls] if m.calls else None,
            "tool_call_id": m.tool_call_id,
        }
        for m in messages
    ]


def _save_checkpoints(rows: list[tuple[int, str, str]]) -> None:
    Run.objects.bulk_update(
        [Run(id=run_id, content=content, thinking=thinking) for run_id, content, thinking in rows],
        ["content", "thinking"],
    )


def _finish_run(run_id: int, status: str, result: AgentResult | None, error: str) -> None:
    fields: dict[str, Any] = {"status": status, "finished": timezone.now(), "error": error}
    if result is not None:
        fields.update(
            stop_reason=result.stop, content=result.content, thinking=result.thinking or ""
        )
        if result.usage is not None:
            fields.update(
                usage_prompt=result.usage.prompt,
                usage_completion=result.usage.completion,
                usage_total=result.usage.total,
            )
    Run.objects.filter(id=run_id).update(**fields)


def _start_run(conversation_id: str, content: str) -> tuple[int, TokenUsage, str]:
    run = Run.objects.create(
        conversation_id=conversation_id, status="running", started=timezone.now()
    )
    Conversation.objects.filter(id=conversation_id).update(updated=timezone.now())
    # An untitled conversation is named after its first message, as chat apps do.
    title = " ".join(content.split())[:TITLE_LENGTH]
    if title:
        Conversation.objects.filter(id=conversation_id, title="").update(title=title)
    prompt, completion, total, title = Conversation.objects.filter(id=conversation_id).values_list(
        "usage_prompt", "usage_completion", "usage_total", "title"
    )[0]
    return run.id, TokenUsage(prompt, completion, total), title


def _prepare_run(
    conversation_id: str, user_id: int, message: Message
) -> tuple[LoadedSession, int, TokenUsage, dict[str, Any], str]:
    """Load the session, store the user message and open the ``Run`` row, in one transaction."""
    loaded = load_session(conversation_id, user_id)
    snapshot = loaded.conversation or {"id": conversation_id, "sections": [], "messages": []}
    conversation = create_conversation(snapshot=snapshot)
    conversation.add(message)
    stored = conversation.snapshot()
    with transaction.atomic():
        DjangoConversationStore(owner=user_id).set_sync(stored)
        run_id, usage, title = _start_run(conversation_id, message.content)
    payload = _committed_payload([message])[0]
    return replace(loaded, conversation=stored), run_id, usage, payload, title


class RunManager:
    """Every run of this process, keyed by conversation; at most one run per conversation."""

    def __init__(self, *, origin: str | None = None) -> None:
        self.origin = origin or uuid.uuid4().hex
        self._runs: dict[str, ActiveRun] = {}
        self._starting: set[str] = set()
        self._subscribers: dict[str, set[Subscriber]] = {}
        self._outbox: asyncio.Queue[tuple[str, dict[str, Any]]] | None = None
        self._publisher: asyncio.Task[None] | None = None
        self.committed_ids: dict[str, set[str]] = {}
        # One task saves every active run's in-flight text each second, in one statement.
        self._checkpointer: asyncio.Task[None] | None = None
        self._saving: asyncio.Future[None] | None = None
        # Frames waiting for the shared layer, by conversation, and the task that sends them.
        self._remote: dict[str, list[dict[str, Any]]] = {}
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

    def busy(self, conversation_id: str) -> bool:
        return conversation_id in self._runs or conversation_id in self._starting

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, conversation_id: str, frame: dict[str, Any]) -> None:
        """Queue ``frame`` for delivery, in order, to every socket on the conversation."""
        if self._outbox is None or self._publisher is None or self._publisher.done():
            self._outbox = asyncio.Queue()
            self._publisher = asyncio.get_running_loop().create_task(self._publish_loop())
        self._outbox.put_nowait((conversation_id, frame))

    async def _publish_loop(self) -> None:
        outbox = self._outbox
        assert outbox is not None
        shared = is_shared(get_channel_layer())
        while True:
            conversation_id, frame = await outbox.get()
            for subscriber in list(self._subscribers.get(conversation_id, ())):
                try:
                    await subscriber(frame)
                except Exception:  # noqa: BLE001 - one broken socket must not stop the others
                    logger.debug("dropping frame for a closed subscriber", exc_info=True)
            if shared:
                self._remote.setdefault(conversation_id, []).append(frame)
                self._relay_wake.set()
                if self._relay is None or self._relay.done():
                    self._relay = asyncio.get_running_loop().create_task(self._relay_loop())
            outbox.task_done()

    async def _relay_loop(self) -> None:
        """Send frames to other processes in batches, one message per conversation per wake.

        Local sockets never wait for this: the shared layer is slower than a socket write.
        """
        layer = get_channel_layer()
        while True:
            await self._relay_wake.wait()
            self._relay_wake.clear()
            batches, self._remote = self._remote, {}
            sends = [
                layer.group_send(
                    group_name(conversation_id),
                    {"type": "run.frames", "origin": self.origin, "frames": frames},
                )
                for conversation_id, frames in batches.items()
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
            loaded, run_id, usage, user_payload, title = await sync_to_async(_prepare_run)(
                conversation_id, user_id, message
            )
            session = await ChatSession.from_loaded(loaded)
            session.run_id = run_id
            self.committed_ids[conversation_id] = {
                m.id for m in session.agent.context.messages.messages()
            }
            active = ActiveRun(self, session, run_id, conversation_id)
            active.total = usage
            session.agent.context.messages.emitter.on(
                "compact",
                lambda section: active.emit("compaction", section=section_payload(section)),
            )
            self._runs[conversation_id] = active
            if self._checkpointer is None or self._checkpointer.done():
                self._checkpointer = asyncio.get_running_loop().create_task(self._checkpoints())
            await self._listen(conversation_id)
        finally:
            self._starting.discard(conversation_id)
        active.emit("started", message=user_payload, nonce=nonce, title=title)
        active.task = asyncio.get_running_loop().create_task(active.drive())
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
            self._saving = asyncio.ensure_future(sync_to_async(_save_checkpoints)(rows))
            try:
                await self._saving
            except Exception:  # noqa: BLE001 - a failed checkpoint must not stop the next
                logger.warning("saving run checkpoints failed", exc_info=True)

    async def checkpoints_done(self) -> None:
        """Wait for a checkpoint write in flight, if any."""
        if self._saving is not None and not self._saving.done():
            await asyncio.gather(self._saving, return_exceptions=True)

    def release(self, conversation_id: str, active: ActiveRun) -> None:
        if self._runs.get(conversation_id) is active:
            del self._runs[conversation_id]
            if self._control is not None:
                layer = get_channel_layer()
                asyncio.get_running_loop().create_task(
                    layer.group_discard(join_group(conversation_id), self._control)
                )

    # -- joins from other processes -----------------------------------------------------------

    async def _listen(self, conversation_id: str) -> None:
        """Answer snapshot requests for this run from sockets in other processes."""
        layer = get_channel_layer()
        if not is_shared(layer):
            return
        if self._control is None:
            self._control = await layer.new_channel()
            self._control_task = asyncio.get_running_loop().create_task(self._answer(layer))
        await layer.group_add(join_group(conversation_id), self._control)

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
            if message.get("type") != "run.join":
                continue
            active = self._runs.get(str(message.get("conversation")))
            if active is not None:
                await layer.send(
                    message["reply"], {"type": "run.snapshot", "snapshot": active.snapshot()}
                )

    async def wait(self, conversation_id: str) -> None:
        """Wait for the conversation's run (if any) to settle."""
        active = self._runs.get(conversation_id)
        if active is not None and active.task is not None:
            await asyncio.shield(active.task)


def recover_interrupted() -> int:
    """Close runs a previous process left unfinished as ``interrupted``, keeping their text.

    The partial answer (last checkpoint) joins the conversation as an assistant message.
    """
    from conversations.stores import DjangoConversationStore
    from orkestrel.core import create_conversation

    store = DjangoConversationStore()
    closed = 0
    for run in Run.objects.filter(status__in=("queued", "running")).select_related("conversation"):
        if run.content:
            snapshot = store.get_sync(str(run.conversation_id))
            if snapshot is not None:
                conversation = create_conversation(snapshot=snapshot)
                conversation.add({"role": "assistant", "content": run.content})
                store.set_sync(conversation.snapshot())
        Run.objects.filter(id=run.id).update(
            status="interrupted", stop_reason="interrupted", finished=timezone.now()
        )
        closed += 1
    return closed


run_manager = RunManager()
