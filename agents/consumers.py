"""The chat websocket: a protocol adapter between browser frames and the run manager."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Any, assert_never

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404

from conversations.approvals import Decision
from conversations.attachments import (
    discard_attachments,
    resolve_attachments,
    resolve_documents,
)
from conversations.models import Conversation, Run
from conversations.questions import QuestionRefused
from conversations.services import ConversationState, conversation_state
from orkestrel.core.documents import Document
from orkestrel.db import in_thread
from orkestrel.protocol import (
    ClientAbort,
    ClientAnswer,
    ClientApprove,
    ClientCompact,
    ClientEdit,
    ClientFrame,
    ClientPendingPop,
    ClientRegenerate,
    ClientRespond,
    ClientResync,
    ClientSelectBranch,
    ClientSend,
    ErrorFrame,
    FrameError,
    Limits,
    PendingFrame,
    RunSnapshot,
    ServerFrame,
    StateFrame,
    parse_client_frame,
)
from orkestrel.refusals import Refusal
from orkestrel.storable import first_fault
from orkestrel.telemetry.metrics import follower

from .framing import MAX_OUTGOING_BYTES, fitted
from .runs import RunManager, RunService, is_shared, run_manager
from .runs.inputs import respond
from .runs.interruptions import ends_interrupted
from .runs.questions import answer
from .runs.service import Compacted
from .runs.submissions import Repeat

__all__ = ["ChatConsumer", "NotFoundConsumer"]

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


@database_sync_to_async
def _owns(user_id: int, conversation_id: str) -> bool:
    return Conversation.objects.filter(id=conversation_id, owner_id=user_id).exists()


@database_sync_to_async
def _running(conversation_id: str) -> bool:
    return Run.objects.filter(conversation_id=conversation_id, status="running").exists()


@database_sync_to_async
def _state(user: Any, conversation_id: str) -> ConversationState:
    return conversation_state(user=user, conversation_id=conversation_id)


class ChatConsumer(AsyncWebsocketConsumer):
    """One socket on one conversation; every frame handler validates, calls, answers."""

    manager: RunManager = run_manager

    @property
    def service(self) -> RunService:
        """The run service over this consumer's manager (tests give a consumer its own)."""
        return RunService(self.manager)

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.conversation_id = str(self.scope["url_route"]["kwargs"]["conversation_id"])
        self._unsubscribe: Callable[[], None] | None = None
        self._unfollow: Callable[[], Awaitable[None]] | None = None
        # Refusals accept first: a close before the handshake reaches a browser as a bare
        # 1006, and the client could not tell "log in again" from "the network dropped".
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if not await _owns(user.id, self.conversation_id):
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.user = user
        # This process closes runs a killed server left behind (from its first socket on).
        self.manager.sweeper.ensure()
        await self.accept()
        # Counted while it follows (``orkestrel_followers``); released at disconnect.
        self._followed = follower("websocket")
        if is_shared(self.channel_layer):
            # A run in another process reaches this socket through this process's relay.
            self._unfollow = await self.manager.relay.follow(self.conversation_id)
        await self._send_state()

    async def disconnect(self, code: int) -> None:
        # A closing tab never stops a run: only the subscription goes.
        followed = getattr(self, "_followed", None)
        if followed is not None:
            followed()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        unfollow = getattr(self, "_unfollow", None)
        if unfollow is not None:
            self._unfollow = None
            await unfollow()

    async def _send_state(self) -> None:
        """Send the committed state and the in-flight run, then the live frames after it."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        pending: list[dict[str, Any]] = []
        live = False

        async def deliver(frame: dict[str, Any]) -> None:
            if not live:
                pending.append(frame)
            elif ends_interrupted(frame):
                # A run whose process died: this socket may have seen frames past its end's
                # number, so the client rebuilds from what is committed (the partial answer).
                await self.send_json(frame)
                self._resync = asyncio.ensure_future(self._send_state())
            elif not self._stale(frame):
                await self.send_json(frame)

        self._unsubscribe = self.manager.subscribe(self.conversation_id, deliver)
        active = self.manager.active(self.conversation_id)
        # The run snapshot is taken before the database read: anything committed in between
        # arrives twice at worst (clients de-duplicate by message id), never not at all.
        run = active.snapshot() if active is not None else await self._remote_snapshot()
        # Frames of that run from other processes up to its ``seq`` are in the snapshot.
        self._baseline = (run["id"], run["seq"]) if run is not None else None
        try:
            state = await _state(self.user, self.conversation_id)
        except (Http404, PermissionDenied):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.send_json(StateFrame(**state, run=run))
        run_id, seq = (run["id"], run["seq"]) if run is not None else (None, 0)
        for frame in pending:
            if frame.get("run") == run_id and (frame.get("seq") or 0) <= seq:
                continue
            await self.send_json(frame)
        live = True

    async def send_json(self, frame: ServerFrame | dict[str, Any]) -> None:
        text = fitted(frame, settings.ORKESTREL.get("MAX_FRAME_BYTES", MAX_OUTGOING_BYTES))
        if text is not None:
            await self.send(text_data=text)

    async def _refuse(self, code: str, message: str) -> None:
        await self.send_json(ErrorFrame(code=code, message=message))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            frame = parse_client_frame(text_data, Limits.from_settings())
        except FrameError as error:
            await self._refuse(error.code, str(error))
            return
        # Every string of a frame may reach a column (a message, a reason, a tool's arguments).
        fault = first_fault(dataclasses.asdict(frame))
        if fault is not None:
            await self._refuse("invalid", f"{frame.type}: {fault.message}")
            return
        try:
            await self._dispatch(frame)
        except Refusal as error:
            await self.send_json(ErrorFrame.refusing(error))

    async def _dispatch(self, frame: ClientFrame) -> None:
        match frame:
            case ClientSend():
                await self.on_send(frame)
            case ClientAbort():
                await self.on_abort(frame)
            case ClientCompact():
                await self.on_compact(frame)
            case ClientPendingPop():
                await self.on_pending_pop(frame)
            case ClientApprove():
                await self.on_approve(frame)
            case ClientAnswer():
                await self.on_answer(frame)
            case ClientRespond():
                # A refusal (``not_found``, ``invalid_input``) answers this socket only.
                await respond(
                    self.service.manager,
                    user_id=self.user.id,
                    conversation_id=self.conversation_id,
                    request_id=frame.id,
                    action=frame.action,
                    content=frame.content,
                )
            case ClientRegenerate():
                await self.service.regenerate(
                    user_id=self.user.id,
                    conversation_id=self.conversation_id,
                    message=frame.message,
                )
            case ClientEdit():
                await self.service.edit(
                    user_id=self.user.id,
                    conversation_id=self.conversation_id,
                    message=frame.message,
                    content=frame.content,
                )
            case ClientSelectBranch():
                await self.service.select_branch(
                    user_id=self.user.id,
                    conversation_id=self.conversation_id,
                    point=frame.point,
                    index=frame.index,
                )
            case ClientResync():
                await self.on_resync(frame)
            case _:
                assert_never(frame)

    async def on_send(self, frame: ClientSend) -> None:
        images = frame.images
        documents: tuple[Document, ...] = ()
        if frame.attachments:
            try:
                attached = await in_thread(resolve_attachments)(
                    self.conversation_id, frame.attachments
                )
            except LookupError as error:
                await self._refuse("invalid", f"send.attachments: {error}")
                return
            images = (*images, *attached)
            documents = await in_thread(resolve_documents)(self.conversation_id, frame.attachments)
        # A ``/compact`` the model could not summarize (``CompactionFailed``) folded nothing
        # (every tab got the notice); this socket's request is refused, as every refusal is.
        sent = await self.service.send(
            user_id=self.user.id,
            conversation_id=self.conversation_id,
            content=frame.content,
            images=images,
            documents=documents,
            nonce=frame.nonce,
        )
        if isinstance(sent, Compacted) and sent.section is None:
            await self._refuse("nothing_to_compact", "nothing to fold yet")
        if isinstance(sent, Repeat):
            # An accidental second submit: the first one's run (or queue) answers for both.
            await self._refuse("duplicate", "the same message was just sent; this one is ignored")
        if frame.attachments:
            await in_thread(discard_attachments)(self.conversation_id, frame.attachments)

    async def on_abort(self, frame: ClientAbort) -> None:
        if not self.service.cancel(self.conversation_id):
            await self._refuse("idle", "nothing to stop")

    async def on_compact(self, frame: ClientCompact) -> None:
        section = await self.service.compact(
            user_id=self.user.id, conversation_id=self.conversation_id, focus=frame.focus
        )
        if section is None:
            await self._refuse("nothing_to_compact", "nothing to fold yet")

    async def on_pending_pop(self, frame: ClientPendingPop) -> None:
        taken = await self.service.pop_pending(
            user_id=self.user.id, conversation_id=self.conversation_id
        )
        # Every tab sees the queue empty; this one gets the texts back for its composer, and
        # the images as attachments its next send names.
        await self.send_json(
            PendingFrame(messages=[], taken=taken.texts, attachments=taken.attachments)
        )

    async def on_approve(self, frame: ClientApprove) -> None:
        try:
            await self.service.decide(
                user_id=self.user.id,
                username=self.user.get_username(),
                approval_id=frame.id,
                decision=Decision(frame.decision == "approve", frame.reason, frame.arguments),
            )
        except LookupError:
            await self._refuse("not_found", "no such approval")

    async def on_answer(self, frame: ClientAnswer) -> None:
        try:
            await answer(
                self.service.manager,
                user_id=self.user.id,
                username=self.user.get_username(),
                question_id=frame.id,
                answer=frame.answer,
            )
        except LookupError:
            await self._refuse("not_found", "no such question")
        except QuestionRefused as error:
            await self._refuse(error.code, str(error))

    async def on_resync(self, frame: ClientResync) -> None:
        await self._send_state()

    async def _remote_snapshot(self) -> RunSnapshot | None:
        """Ask the process running this conversation's answer for its in-flight snapshot."""
        layer = self.channel_layer
        if not is_shared(layer) or not await _running(self.conversation_id):
            return None
        return await self.manager.relay.snapshot(
            self.conversation_id, wait=self.manager.timings.join_timeout
        )

    def _stale(self, frame: dict[str, Any]) -> bool:
        """Whether ``frame`` is in the snapshot this socket got already (a frame of a run in
        another process, sent before the snapshot was taken, arriving after it)."""
        baseline = getattr(self, "_baseline", None)
        return (
            baseline is not None
            and frame.get("run") == baseline[0]
            and (frame.get("seq") or 0) <= baseline[1]
        )


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any other websocket path: refused with close code 4404 (not a server error)."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)
