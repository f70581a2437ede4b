"""Runs on Celery workers, the database side: queueing, claiming and taking over ``Run`` rows.

The row is the run's lease, as an agent job's is. The web process opens the run queued, held
by no one, its heartbeat ``QUEUE_LEASE`` seconds ahead (the broker holds it meanwhile: no
sweep takes a run for dead while it waits for a free worker), and sends its id to the broker
(``RUN_CHAT``). A worker claims it with a conditional ``UPDATE`` (of two messages for one run,
one wins), holds it as ``worker:<owner>`` and beats every second like any run's holder.

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

from django.db import transaction
from django.utils import timezone

from conversations.approvals import Decided
from conversations.models import Run
from orkestrel.celery import app as celery_app
from orkestrel.core import TokenUsage
from orkestrel.protocol import MessagePayload

from ..runtime.spec import LoadedSession
from .handoff import Handoff
from .records import prepare_run

__all__ = [
    "QUEUE_LEASE",
    "RUN_CHAT",
    "TAKEOVERS",
    "TAKEOVER_WINDOW",
    "WORKER_HOLDER",
    "Claim",
    "Takeover",
    "claim_run",
    "closed_runs",
    "prepare_queued",
    "publish_run",
    "takeovers",
]

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


def prepare_queued(*args: Any, **kwargs: Any) -> Prepared:
    """``prepare_run`` for a run the workers run: the same hop, the run left queued for them
    (held by no one, its lease with the broker)."""
    with transaction.atomic():
        prepared = prepare_run(*args, **kwargs)
        Run.objects.filter(id=prepared[1]).update(
            status=Run.Status.QUEUED,
            holder="",
            started=None,
            heartbeat=timezone.now() + timedelta(seconds=QUEUE_LEASE),
        )
    return prepared


def publish_run(handoff: Handoff) -> None:
    """Send the run to the broker (blocking: call it off the event loop)."""
    celery_app.send_task(RUN_CHAT, args=[handoff.to_data()], task_id=f"run-{handoff.run_id}")


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
    active = (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.AWAITING_APPROVAL)
    return "held" if status in active else "settled"


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
) -> list[Takeover]:
    """The interrupted runs a worker continues: workers' runs (or ``run_id``, whose message
    proves it was one) closed in the last ``window`` seconds, still the latest run of their
    conversation, after at most ``limit`` interrupted runs in a row."""
    since = timezone.now() - timedelta(seconds=window)
    found = Run.objects.filter(status=Run.Status.INTERRUPTED, finished__gte=since)
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
