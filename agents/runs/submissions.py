"""What a person's submission becomes, read just before its run, for every front door alike.

``read_submission`` interprets it (``commands``, with the operators' prompt templates) and
drops an accidental double submit (seed 004: "an identical user submission immediately
following another user submission is ignored"). A submission repeats the previous one when
it says the same (the same text once trimmed and expanded, the same images), on the same
user's same conversation, within ``ORKESTREL["DOUBLE_SUBMIT_SECONDS"]`` (2 s) of when that
one was accepted, while that one is still the latest user message (or the latest pending).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from conversations.models import Message, PendingMessage, Run
from conversations.pending import pending_list
from orkestrel.protocol import MessagePayload, PendingPayload, message_payload

from ..models import PromptTemplate
from .commands import Command, Say, interpret

__all__ = ["DOUBLE_SUBMIT_SECONDS", "Repeat", "find_repeat", "read_submission"]

DOUBLE_SUBMIT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Repeat:
    """An identical submission right after the previous one: nothing is stored or run.

    ``message`` is the stored user message it repeats and ``run`` the run that message
    started; a repeat of a message waiting for the next run has ``pending`` (the queue).
    """

    message: MessagePayload | None
    run: int | None
    pending: list[PendingPayload] | None = None


def read_submission(
    user_id: int, conversation_id: str, content: str, images: tuple[str, ...] = ()
) -> Command | Repeat:
    """What the user's submission asks for, or ``Repeat`` (synchronous: call it in a thread;
    one or two small queries, one more for a ``/name``)."""
    command = interpret(content, images=bool(images), expand=PromptTemplate.objects.expansion)
    if isinstance(command, Say):
        window = settings.ORKESTREL.get("DOUBLE_SUBMIT_SECONDS", DOUBLE_SUBMIT_SECONDS)
        repeat = find_repeat(user_id, conversation_id, command.content, images, window)
        if repeat is not None:
            return repeat
    return command


def find_repeat(
    user_id: int,
    conversation_id: str,
    content: str,
    images: tuple[str, ...],
    window: float,
) -> Repeat | None:
    """The previous submission on the user's conversation if ``content`` and ``images``
    repeat it within ``window`` seconds of its acceptance, else ``None``."""
    if window <= 0:
        return None
    cutoff = timezone.now() - timedelta(seconds=window)
    # Messages wait only behind a running answer, whose own message came before them: the
    # latest pending one, if any, is the latest submission.
    queued = (
        PendingMessage.objects.filter(
            conversation_id=conversation_id, conversation__owner_id=user_id
        )
        .order_by("-created", "-id")
        .values("pk", "content", "created")
        .first()
    )
    if queued is not None:
        if queued["created"] < cutoff or queued["content"] != content:
            return None
        stored = PendingMessage.objects.filter(pk=queued["pk"]).values_list("images", flat=True)
        if list(stored[0] or ()) != list(images):
            return None
        return Repeat(None, None, pending_list(conversation_id))
    # The latest user message, read backwards through the (conversation, position) index.
    latest = (
        Message.objects.filter(
            conversation_id=conversation_id, conversation__owner_id=user_id, role="user"
        )
        .order_by("-position")
        .values("pk", "message_id", "content", "created")
        .first()
    )
    if latest is None or latest["created"] < cutoff or latest["content"] != content:
        return None
    # Only now the images, which may be megabytes.
    kept = Message.objects.filter(pk=latest["pk"]).values_list("images", flat=True)[0]
    if list(kept or ()) != list(images):
        return None
    # The run opens in the transaction that stores its message, just before it.
    run = (
        Run.objects.filter(conversation_id=conversation_id, created__lte=latest["created"])
        .order_by("-created", "-id")
        .values_list("id", flat=True)
        .first()
    )
    payload = message_payload(
        id=latest["message_id"], role="user", content=content, images_count=len(images)
    )
    return Repeat(payload, run)
