"""Runs on Celery workers, the database side: queueing, claiming and taking over ``Run`` rows.

The row is the run's lease, as an agent job's is. The web process opens the run queued, held
by no one, its heartbeat ``QUEUE_LEASE`` seconds ahead (the broker holds it meanwhile: no
sweep takes a run for dead while it waits for a free worker), and sends its id to the broker
(``RUN_CHAT``). A worker claims it with a conditional ``UPDATE`` (of two messages for one run,
one wins), holds it as ``worker:<owner>`` and beats every second like any run's holder.

A stop before any worker claimed the run settles it here, with a conditional ``UPDATE`` that
races the claim's (``stop_queued``): one of the two wins, so the worker that takes the message
later finds the run settled, or the stop goes to the worker that claimed it. The web process
stores the run's ``started`` frame with it, for the stopped run's followers and replay.

A worker killed mid-run stops beating; any sweep then closes the run as ``interrupted``,
keeping its last checkpoint as an assistant message (``records.recover_interrupted``), and a
worker's sweep continues it (``takeovers``): a new run on the conversation answers on from
the history as it stands, with nothing of the first run's repeated. That is what a person
expects of a chat; it is bounded (``TAKEOVERS`` lost workers in a row, within
``TAKEOVER_WINDOW`` of the loss), so an answer that kills its workers settles interrupted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from conversations.approvals import Decided
from conversations.models import Run
from conversations.services import context_readout
from orkestrel.celery import app as celery_app
from orkestrel.core import AgentResult, TokenUsage
from orkestrel.protocol import (
    AbortFrame,
    ContextPayload,
    FinishFrame,
    MessagePayload,
    encode,
    result_payload,
)
from orkestrel.telemetry.propagation import outgoing

from ..runtime.spec import LoadedSession
from .handoff import Handoff
from .payloads import reason_text
from .records import prepare_run

__all__ = [
    "CONTINUED",
    "QUEUE_LEASE",
    "RUN_CHAT",
    "TAKEOVERS",
    "TAKEOVER_WINDOW",
    "WORKER_HOLDER",
    "Claim",
    "Prepared",
    "QueuedStop",
    "Takeover",
    "claim_run",
    "closed_runs",
    "prepare_queued",
    "publish_run",
    "still_running",
    "stop_queued",
    "takeovers",
]

# The notice a continued run sends after its ``started`` frame (and the kept partial answer).
CONTINUED = "run_continued"
# The Celery task that runs one run (``agents.runs.tasks``), sent by name.
RUN_CHAT = "agents.runs.run"
# A worker's runs are held as ``worker:<owner>``: the takeover sweep looks only at those.
WORKER_HOLDER = "worker:"
# How long a queued run waits for a worker before a sweep takes it for lost (seconds). Its
# message stays on the broker: a worker that takes it later continues the run (``takeovers``).
QUEUE_LEASE = 300.0
# Lost workers in a row after which a conversation's answer is left interrupted, and how long
# after a loss a sweep still continues it (seconds).
TAKEOVERS = 2
TAKEOVER_WINDOW = 600.0
TAKEOVER_BATCH = 100

type Claim = Literal["claimed", "held", "settled", "missing", "interrupted"]

Prepared = tuple[LoadedSession, int, TokenUsage, MessagePayload | None, str, tuple[Decided, ...]]


def prepare_queued(
    conversation_id: str, user_id: int, *args: Any, nonce: str | None = None, **kwargs: Any
) -> Prepared:
    """``prepare_run`` for a run the workers run: the same hop, the run left queued for them
    (held by no one, its lease with the broker), its ``started`` frame (``nonce``: the
    client's) stored with it until a worker's frames replace it."""
    with transaction.atomic():
        prepared = prepare_run(conversation_id, user_id, *args, **kwargs)
        _, run_id, _, message, title, _ = prepared
        started = Handoff(
            run_id=run_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            nonce=nonce,
            title=title,
        ).started()
        Run.objects.filter(id=run_id).update(
            status=Run.Status.QUEUED,
            holder="",
            started=None,
            heartbeat=timezone.now() + timedelta(seconds=QUEUE_LEASE),
            # No follower sees it before the run settles (``stored_events``): a stop that
            # settles the queued run sends it first (``stop_queued``).
            events=[started],
        )
    return prepared


def publish_run(handoff: Handoff) -> None:
    """Send the run to the broker (blocking: call it off the event loop)."""
    celery_app.send_task(
        RUN_CHAT, args=[handoff.to_data()], task_id=f"run-{handoff.run_id}", headers=outgoing()
    )


def claim_run(handoff: Handoff, holder: str) -> Claim:
    """Claim the queued run for ``holder``: ``"claimed"`` when it is now ``holder``'s.

    ``"held"`` when a worker runs it already (a second message: if that worker is lost, the
    takeover sweep continues the run), ``"interrupted"`` when a sweep closed it before any
    worker took it, ``"settled"`` or ``"missing"`` when there is nothing to run.
    """
    now = timezone.now()
    claimed = Run.objects.filter(id=handoff.run_id, status=Run.Status.QUEUED, holder="").update(
        status=Run.Status.RUNNING, holder=holder, heartbeat=now, started=now
    )
    if claimed:
        return "claimed"
    status = Run.objects.filter(id=handoff.run_id).values_list("status", flat=True).first()
    if status is None:
        return "missing"
    if status == Run.Status.INTERRUPTED:
        return "interrupted"
    active = (
        Run.Status.QUEUED,
        Run.Status.RUNNING,
        Run.Status.AWAITING_APPROVAL,
        Run.Status.AWAITING_INPUT,
    )
    return "held" if status in active else "settled"


@dataclass(frozen=True, slots=True)
class QueuedStop:
    """What ``stop_queued`` did: ``frames`` (``started``, ``abort``, ``finish``, stored) when it
    settled the run; none when the run is held (``run_id``, by a worker: the stop must go
    there) or there was no run (``run_id`` ``None``)."""

    run_id: int | None
    owner_id: int | None = None
    frames: tuple[dict[str, Any], ...] = ()

    @property
    def settled(self) -> bool:
        return bool(self.frames)


def stop_queued(conversation_id: str, reason: str, run_id: int | None = None) -> QueuedStop:
    """Settle the conversation's run (``run_id``, when given) if it is queued and no worker
    has claimed it, the way a run stopped before its first word settles (``partial``,
    ``abort``, no content), its frames stored for replay.

    The decision is one conditional ``UPDATE`` (queued and held by no one), the same one
    ``claim_run``'s races: of a stop and a claim, exactly one changes the row.
    """
    found = Run.objects.filter(
        conversation_id=conversation_id, status__in=(Run.Status.QUEUED, Run.Status.RUNNING)
    )
    if run_id is not None:
        found = found.filter(id=run_id)
    row = found.values("id", "status", "holder", "events", "conversation__owner_id").first()
    if row is None:
        return QueuedStop(run_id)
    if row["status"] != Run.Status.QUEUED or row["holder"]:
        return QueuedStop(row["id"])
    with transaction.atomic():
        stopped = Run.objects.filter(id=row["id"], status=Run.Status.QUEUED, holder="").update(
            status=Run.Status.PARTIAL,
            stop_reason="abort",
            finished=timezone.now(),
            content="",
            thinking="",
            error="",
        )
        if not stopped:
            return QueuedStop(row["id"])  # a worker claimed it meanwhile
        # Decided: a claim now waits for this transaction, then finds the run settled.
        owner = get_user_model().objects.get(pk=row["conversation__owner_id"])
        meter = context_readout(user=owner, conversation_id=conversation_id)
        frames = _stopped_frames(row["id"], list(row["events"] or ()), reason, meter)
        Run.objects.filter(id=row["id"]).update(events=frames)
    return QueuedStop(row["id"], owner.pk, tuple(frames))


def _stopped_frames(
    run_id: int, sent: list[dict[str, Any]], reason: str, context: ContextPayload
) -> list[dict[str, Any]]:
    """The run's frames once stopped: what it stored (its ``started``), then the ``abort`` and
    ``finish`` a run stopped before its first word sends."""
    seq = len(sent)
    result = result_payload(AgentResult(content="", partial=True, stop="abort", reason=reason))
    return [
        *sent,
        encode(AbortFrame(run=run_id, seq=seq + 1, reason=reason_text(reason))),
        encode(FinishFrame(run=run_id, seq=seq + 2, result=result, context=context)),
    ]


def still_running(run_id: int) -> bool:
    """Whether the run is running (held, not settled)."""
    return Run.objects.filter(id=run_id, status=Run.Status.RUNNING).exists()


def closed_runs(run_ids: list[int]) -> set[int]:
    """Which of these runs (held here, not settled) a sweep closed as interrupted: their
    holder's beats were late, and another worker may be continuing them."""
    return set(
        Run.objects.filter(id__in=run_ids, status=Run.Status.INTERRUPTED).values_list(
            "id", flat=True
        )
    )


@dataclass(frozen=True, slots=True)
class Takeover:
    """An interrupted run to continue: its conversation, the owner a new run answers as, and
    the partial answer the interruption kept (the conversation's last message, when any)."""

    run_id: int
    conversation_id: str
    user_id: int
    partial: str


def takeovers(
    *,
    run_id: int | None = None,
    window: float = TAKEOVER_WINDOW,
    limit: int = TAKEOVERS,
    grace: float = 0.0,
) -> list[Takeover]:
    """The interrupted runs a worker continues: workers' runs (or ``run_id``, whose message
    proves it was one) closed in the last ``window`` seconds (and at least ``grace`` seconds
    ago), still the latest run of their conversation, after at most ``limit`` interrupted runs
    in a row."""
    now = timezone.now()
    found = Run.objects.filter(
        status=Run.Status.INTERRUPTED,
        finished__gte=now - timedelta(seconds=window),
        finished__lte=now - timedelta(seconds=grace),
    )
    if run_id is not None:
        found = found.filter(id=run_id)
    else:
        found = found.filter(holder__startswith=WORKER_HOLDER)
    rows: list[Mapping[str, Any]] = list(
        found.values("id", "conversation_id", "conversation__owner_id", "content")[:TAKEOVER_BATCH]
    )
    chosen: list[Takeover] = []
    for row in rows:
        latest = list(
            Run.objects.filter(conversation_id=row["conversation_id"])
            .order_by("-created", "-id")
            .values_list("id", "status")[: limit + 1]
        )
        if not latest or latest[0][0] != row["id"]:
            continue  # a later run followed (the user's, or a takeover already)
        if len(latest) > limit and all(s == Run.Status.INTERRUPTED for _, s in latest):
            continue  # lost too often in a row: it stays interrupted
        chosen.append(
            Takeover(
                run_id=row["id"],
                conversation_id=str(row["conversation_id"]),
                user_id=row["conversation__owner_id"],
                partial=row["content"],
            )
        )
    return chosen
