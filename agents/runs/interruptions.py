"""Runs a crash closed: closing them, the frame they end on, and how each follower meets it.

A run whose process died is closed as ``interrupted`` by the first sweep (or start) that finds
its heartbeat stale, in one transaction: the row settles, its last checkpoint joins the
conversation as an assistant message, and a ``finish`` frame (``stop: "interrupted"``, the
partial text in ``result.content``) is stored as the run's last frame. The closing process
then publishes it, so live followers on every process end on it as replays from the database
do.

Its ``seq`` is one past what the run had stored; the frames the dead process sent after its
last store died with it, and a follower may have seen some of them. So a follower that has
seen frames up to ``n`` takes the interrupted ``finish`` as frame ``n + 1`` (``renumbered``):
every stream still numbers its frames without gaps, and ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from conversations.models import Conversation, PendingMessage, Run
from conversations.services import context_readout
from conversations.stores import DjangoConversationStore
from conversations.writer import Thought, write_thinking
from orkestrel.core import create_conversation
from orkestrel.protocol import ContextPayload, FinishFrame, ResultPayload, encode

__all__ = [
    "INTERRUPTED",
    "REASON",
    "Interrupted",
    "close_interrupted",
    "ends_interrupted",
    "interrupt",
    "interrupted_frame",
    "name_continuation",
    "stranded",
    "renumbered",
    "replayed",
]

# The ``stop`` of an interrupted run's ``finish`` (and the row's ``stop_reason``).
INTERRUPTED = "interrupted"
REASON = "the server process writing this answer stopped; what it had saved is kept"
# A run is still going in these statuses (``records.ACTIVE``).
_ACTIVE = ("queued", "running")
# A worker's runs are held as ``worker:<owner>`` (``workers.WORKER_HOLDER``).
_WORKER_HOLDER = "worker:"


@dataclass(frozen=True, slots=True)
class Interrupted:
    """A run just closed as interrupted: its terminal ``frame`` (stored; the closer publishes
    it), and whether a worker held it (then a new run may continue it)."""

    run_id: int
    conversation_id: str
    owner_id: int
    frame: dict[str, Any]
    worker: bool


def close_interrupted(stale: float = 0.0) -> list[Interrupted]:
    """Close the runs whose process died as ``interrupted``, keeping their text.

    A run is dead when its heartbeat is older than ``stale`` seconds (``0``: every unfinished
    run, for a start-up with no other server running). Each closes in a transaction of its
    own; one that another process closed meanwhile is skipped.
    """
    cutoff = timezone.now() - timedelta(seconds=stale)
    dead = Run.objects.filter(status__in=_ACTIVE).filter(
        Q(heartbeat__isnull=True) | Q(heartbeat__lt=cutoff)
    )
    closed: list[Interrupted] = []
    for run in dead:
        with transaction.atomic():
            done = interrupt(run)
        if done is not None:
            closed.append(done)
    return closed


def interrupt(run: Run) -> Interrupted | None:
    """Close ``run`` as interrupted (call it in a transaction); ``None`` if it had settled."""
    # Only if still active: another process may have closed it meanwhile.
    if not Run.objects.filter(id=run.id, status__in=_ACTIVE).update(
        status=Run.Status.INTERRUPTED, stop_reason=INTERRUPTED, finished=timezone.now()
    ):
        return None
    conversation_id = str(run.conversation_id)
    if run.content:
        store = DjangoConversationStore()
        snapshot = store.get_sync(conversation_id)
        if snapshot is not None:
            conversation = create_conversation(snapshot=snapshot)
            message = conversation.add({"role": "assistant", "content": run.content})
            store.set_sync(conversation.snapshot())
            if run.thinking:
                # The checkpoint's reasoning is the in-flight answer's (its duration unknown).
                write_thinking(run.conversation_id, {message.id: Thought(run.thinking)})
    owner_id = Conversation.objects.values_list("owner_id", flat=True).get(id=conversation_id)
    owner = get_user_model().objects.get(pk=owner_id)
    sent = list(run.events or ())
    frame = interrupted_frame(
        run.id,
        len(sent) + 1,
        run.content,
        run.thinking,
        context_readout(user=owner, conversation_id=conversation_id),
    )
    Run.objects.filter(id=run.id).update(events=[*sent, frame])
    return Interrupted(
        run_id=run.id,
        conversation_id=conversation_id,
        owner_id=owner.pk,
        frame=frame,
        worker=run.holder.startswith(_WORKER_HOLDER),
    )


def name_continuation(run_id: int, continued_by: int) -> dict[str, Any] | None:
    """Name the run that continues the interrupted run ``run_id`` in its stored ``finish``;
    that frame now (``None``: the run has no interrupted ``finish``)."""
    with transaction.atomic():
        events = list(
            Run.objects.select_for_update().filter(id=run_id).values_list("events", flat=True)[:1]
        )
        frames = list(events[0] or ()) if events else []
        if not frames or not ends_interrupted(frames[-1]):
            return None
        frames[-1] = {**frames[-1], "continued_by": continued_by}
        Run.objects.filter(id=run_id).update(events=frames)
    return frames[-1]


def stranded(limit: int = 100) -> list[tuple[str, int]]:
    """Conversations (and their owners) whose messages wait while their latest run was
    interrupted: a sweep elsewhere or a start-up closed it, and nothing else starts their next
    run. After a failed or stopped run they wait for the user instead (seed 004)."""
    waiting = (
        PendingMessage.objects.values_list("conversation_id", "conversation__owner_id")
        .order_by("conversation_id")
        .distinct()[:limit]
    )
    found: list[tuple[str, int]] = []
    for conversation_id, owner_id in waiting:
        latest = (
            Run.objects.filter(conversation_id=conversation_id)
            .order_by("-created", "-id")
            .values_list("status", flat=True)
            .first()
        )
        if latest == Run.Status.INTERRUPTED:
            found.append((str(conversation_id), owner_id))
    return found


def interrupted_frame(
    run_id: int,
    seq: int,
    content: str,
    thinking: str,
    context: ContextPayload,
    continued_by: int | None = None,
) -> dict[str, Any]:
    """The ``finish`` an interrupted run ends on: its partial answer, and the run that
    continues it (a lost worker's run, taken over), when one does."""
    # Not a kit ``StopReason``: the kit's runs never see their process die.
    result: ResultPayload = {
        "content": content,
        "thinking": thinking or None,
        "usage": None,
        "partial": True,
        "stop": INTERRUPTED,
        "reason": REASON,
    }
    return encode(
        FinishFrame(run=run_id, seq=seq, result=result, context=context, continued_by=continued_by)
    )


def ends_interrupted(frame: Mapping[str, Any]) -> bool:
    """Whether ``frame`` is the ``finish`` of a run a crash closed."""
    if frame.get("type") != "finish":
        return False
    result = frame.get("result")
    return isinstance(result, Mapping) and result.get("stop") == INTERRUPTED


def replayed(events: list[dict[str, Any]], after: int) -> list[dict[str, Any]]:
    """A settled run's stored frames after ``after``: an interrupted run's ``finish`` comes
    last even for a follower that saw frames past it (they died with their process)."""
    rest = events[after:]
    if not rest and events and ends_interrupted(events[-1]):
        return [renumbered(events[-1], after + 1)]
    return rest


def renumbered(frame: Mapping[str, Any], seq: int) -> dict[str, Any]:
    """``frame`` as the follower's frame ``seq`` (an interrupted run's ``finish``)."""
    return {**frame, "seq": seq}
