"""The purge: delete (or, dry, count) the records past their retention, kind by kind.

What each kind is, and when its time starts (``created``: every row has it):

- ``conversations``: deleted with everything in them, past their last activity (``updated``);
  never one with a run still queued, running or awaiting approval.
- ``runs``: settled runs (with their decisions, failures and approvals); the messages stay.
- ``run_events``: the frames a settled run stored for replay are emptied; the run stays.
- ``approvals``: decided or expired tool approvals whose run does not wait on them.
- ``decisions``, ``tool_failures``: the authority's verdicts and failed calls (audit logs).
- ``jobs``: settled agent jobs (a schedule's history of them goes with them).

The usage ledger (``UsageEntry``) is never touched: it names runs and jobs by id only, so the
totals it keeps survive every purge. Deletes go in batches, each its own statement, so a long
purge holds no lock for long and a crash midway leaves a consistent, smaller database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from conversations.models import (
    AuthorityDecision,
    Conversation,
    Run,
    ToolApproval,
    ToolFailure,
)

from ..models import RETENTION_KINDS, AgentJob, RetentionKind
from .policy import Retention

__all__ = ["BATCH", "PurgeResult", "purge"]

# Rows deleted (or emptied) per statement.
BATCH = 500
ACTIVE_RUNS = (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.AWAITING_APPROVAL)


@dataclass(frozen=True, slots=True)
class PurgeResult:
    """What a purge deleted (or, ``dry_run``, would delete), by kind."""

    counts: Mapping[RetentionKind, int]
    dry_run: bool

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class Kind:
    """Where one kind's rows are, how to reach their profile, and what purging one does."""

    rows: Callable[[], QuerySet[Any]]
    profile: str
    moment: str = "created"
    # Empty the run's frames rather than delete the row.
    empties_events: bool = False


KINDS: Mapping[RetentionKind, Kind] = {
    "conversations": Kind(
        lambda: Conversation.objects.exclude(
            pk__in=Run.objects.filter(status__in=ACTIVE_RUNS).values("conversation_id")
        ),
        profile="profile",
        moment="updated",
    ),
    "runs": Kind(
        lambda: Run.objects.exclude(status__in=ACTIVE_RUNS), profile="conversation__profile"
    ),
    "run_events": Kind(
        lambda: Run.objects.exclude(status__in=ACTIVE_RUNS).exclude(events=[]),
        profile="conversation__profile",
        empties_events=True,
    ),
    "approvals": Kind(
        lambda: ToolApproval.objects.exclude(status=ToolApproval.Status.PENDING).exclude(
            run__status=Run.Status.AWAITING_APPROVAL
        ),
        profile="conversation__profile",
    ),
    "decisions": Kind(lambda: AuthorityDecision.objects.all(), profile="conversation__profile"),
    "tool_failures": Kind(lambda: ToolFailure.objects.all(), profile="conversation__profile"),
    "jobs": Kind(lambda: AgentJob.objects.exclude(status__in=AgentJob.OPEN), profile="profile"),
}


def purge(
    *, now: datetime, dry_run: bool = False, retention: Retention | None = None
) -> PurgeResult:
    """Purge every kind past its retention at ``now`` (``dry_run``: count, change nothing)."""
    policy = retention or Retention.read()
    counts: dict[RetentionKind, int] = {}
    for kind in RETENTION_KINDS:
        spec = KINDS[kind]
        past = policy.past(kind, profile=spec.profile, moment=spec.moment, now=now)
        counts[kind] = 0 if past is None else _purge_kind(spec, past, dry_run=dry_run)
    return PurgeResult(counts=counts, dry_run=dry_run)


def _purge_kind(spec: Kind, past: Q, *, dry_run: bool) -> int:
    found = spec.rows().filter(past)
    if dry_run:
        return found.count()
    done = 0
    while True:
        keys = list(found.order_by("pk").values_list("pk", flat=True)[:BATCH])
        if not keys:
            return done
        # Checked again as it goes: a conversation whose run started meanwhile is kept.
        batch = spec.rows().filter(past, pk__in=keys)
        if spec.empties_events:
            done += batch.update(events=[])
            continue
        _, by_model = batch.delete()
        done += by_model.get(found.model._meta.label, 0)
        if len(keys) < BATCH:
            return done
