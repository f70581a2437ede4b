"""Messages sent while a run works join it at its next model request (seed 004's pending).

Between turns (the kit's scheduler seam: after a turn's tool results, never mid-response) the
run's ``Inbox`` puts a marker in the run's own chunk stream and waits for it. The run's drive
loop reaches the marker once every chunk before it is handled and committed; it then takes the
conversation's pending messages and stores them, merged into one user message, after the
turn's tool results, in one database hop. The model's next request sees it. Messages that come
after the run's last turn start the next run, as before.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction

from conversations.pending import merged, take_pending
from conversations.stores import DjangoConversationStore
from orkestrel.core import AbortSignal, Message, Scheduler
from orkestrel.protocol import MessagePayload

from .payloads import committed_payload

if TYPE_CHECKING:
    from orkestrel.core import Channel

__all__ = ["Inbox", "Turned", "append_pending"]


@dataclass(frozen=True, slots=True)
class Turned:
    """The marker between two turns in a run's chunk stream: set ``done`` once handled."""

    done: asyncio.Future[None]


class Inbox:
    """The scheduler of a chat run: the one it wraps (``then``) first, then the marker."""

    __slots__ = ("channel", "then", "waiting")

    def __init__(self, then: Scheduler | None) -> None:
        self.then = then
        self.channel: Channel[Any] | None = None
        self.waiting: asyncio.Future[None] | None = None

    async def yield_(self, *, signal: AbortSignal | None = None) -> None:
        """The kit's scheduler seam, awaited before every turn after the first."""
        if self.then is not None:
            await self.then.yield_(signal=signal)
        channel = self.channel
        if (signal is not None and signal.aborted) or channel is None or channel.closed:
            return
        done = self.waiting = asyncio.get_running_loop().create_future()
        channel.push(Turned(done))
        try:
            await done
        finally:
            self.waiting = None

    def release(self) -> None:
        """The drive loop stopped: nothing will reach the marker, so the run must not wait."""
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(None)


def append_pending(conversation_id: str, user_id: int) -> tuple[Message, MessagePayload] | None:
    """Take the conversation's pending messages and store them as one user message at the end
    of its live tail, in one transaction; the message and its payload, or ``None``."""
    with transaction.atomic():
        message = merged(take_pending(conversation_id))
        if message is None:
            return None
        DjangoConversationStore(owner=user_id).append_sync(conversation_id, message)
    return message, committed_payload([message])[0]
