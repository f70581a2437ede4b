"""Tool calls waiting for a person's approval: holding them, deciding them, taking decisions.

The database side of human approval (``agents.runtime.approvals`` is the run's side). A run
that paused stores one ``ToolApproval`` per held call; a decision (from the chat, the API or
the admin) is a row update; the run that goes on takes every decision of the paused run at
once (``take_decisions``), in the transaction that opens it, so a decision is applied once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from orkestrel.protocol import ApprovalPayload
from orkestrel.refusals import Refusal

from .models import AuthorityDecision, Question, Run, ToolApproval

__all__ = [
    "ApprovalRefused",
    "ApprovalsPending",
    "Decided",
    "Decision",
    "HeldCall",
    "Outcome",
    "approval_payload",
    "decide",
    "decided_approvals",
    "expire_due",
    "hold_calls",
    "pending_approvals",
    "ready_runs",
    "run_ready",
    "take_decisions",
    "user_approvals",
]

AWAITING = Run.Status.AWAITING_APPROVAL
# A run paused on a question (``conversations.questions``) goes on the same way.
PAUSED = (Run.Status.AWAITING_APPROVAL, Run.Status.AWAITING_INPUT)


@dataclass(frozen=True, slots=True)
class HeldCall:
    """A call a run holds for approval, as the run saw it."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    parameters: Mapping[str, Any] | None
    rule_id: int | None
    rule_label: str
    zone: str
    approver: str


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's answer to one held call; ``arguments`` replace the model's when given."""

    approve: bool
    reason: str = ""
    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Decided:
    """A decided call as the next run applies it."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    approved: bool
    reason: str
    by: str
    expired: bool = False
    # The call's result without running it: a person's answer to the model's question.
    answer: Any = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a decision did: the updated approval, and whether its run may now go on."""

    approval: ApprovalPayload
    conversation_id: str
    run_id: int
    owner_id: int
    ready: bool


class ApprovalRefused(Refusal):
    """A decision that cannot be taken; ``code`` says why (``decided``, ``operator``, or
    ``invalid`` edited arguments)."""

    _STATUS = {"decided": 409, "operator": 403, "invalid": 400}

    def __init__(self, code: Literal["decided", "operator", "invalid"], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status_code = self._STATUS[code]
        # Edited arguments that do not fit the tool are a field error.
        self.field = "arguments" if code == "invalid" else None


def approval_payload(row: ToolApproval) -> ApprovalPayload:
    """One approval as clients see it (frames, the API)."""
    return {
        "id": row.pk,
        "call_id": row.tool_call_id,
        "tool": row.tool_name,
        "arguments": row.arguments,
        "parameters": row.parameters,
        "approver": row.approver,
        "status": row.status,
        "reason": row.reason,
        "rule": row.rule_label,
        "zone": row.zone,
        "run": row.run_id,
        "conversation": str(row.conversation_id),
        "created": row.created.isoformat(),
        "expires": row.expires.isoformat() if row.expires is not None else None,
        "decided": row.decided.isoformat() if row.decided is not None else None,
        "decided_by": row.decided_by.get_username() if row.decided_by is not None else None,
    }


def user_approvals(user_id: int, status: str | None = "pending") -> QuerySet[ToolApproval]:
    """The approvals on the user's conversations (pending ones unless ``status`` says else;
    ``None``: all), newest first."""
    rows = ToolApproval.objects.filter(conversation__owner_id=user_id).select_related("decided_by")
    if status is not None:
        rows = rows.filter(status=status)
    return rows.order_by("-created", "-pk")


def pending_approvals(conversation_id: str) -> list[ApprovalPayload]:
    """The conversation's calls that wait for a decision, in the model's order."""
    rows = ToolApproval.objects.filter(
        conversation_id=conversation_id, status=ToolApproval.Status.PENDING
    ).order_by("pk")
    return [approval_payload(row) for row in rows]


def decided_approvals(conversation_id: str) -> dict[str, ApprovalPayload]:
    """The conversation's decided calls by call id (who decided, when, with which arguments),
    for their tool cards."""
    rows = (
        ToolApproval.objects.filter(conversation_id=conversation_id)
        .exclude(status=ToolApproval.Status.PENDING)
        .select_related("decided_by")
        .order_by("pk")
    )
    return {row.tool_call_id: approval_payload(row) for row in rows}


def hold_calls(
    run_id: int, conversation_id: str, held: Sequence[HeldCall], timeout: int | None
) -> list[ApprovalPayload]:
    """Store the run's held calls (with a ``timeout`` in seconds, they expire then); their
    payloads."""
    expires = timezone.now() + timedelta(seconds=timeout) if timeout else None
    rows = ToolApproval.objects.bulk_create(
        [
            ToolApproval(
                run_id=run_id,
                conversation_id=conversation_id,
                tool_call_id=call.call_id,
                tool_name=call.tool,
                arguments=dict(call.arguments),
                parameters=dict(call.parameters) if call.parameters is not None else None,
                rule_id=call.rule_id,
                rule_label=call.rule_label,
                zone=call.zone,
                approver=call.approver,
                expires=expires,
            )
            for call in held
        ]
    )
    return [approval_payload(row) for row in rows]


def decide(
    approval_id: int,
    decision: Decision,
    *,
    user_id: int,
    username: str,
    operator: bool = False,
    check: Callable[[Mapping[str, Any] | None, Mapping[str, Any]], None] | None = None,
) -> Outcome:
    """Decide one pending approval, as its owner (``user_id``) or as an operator.

    An operator decides any approval; an owner only their own, and not one whose rule asks
    an operator. ``check(parameters, arguments)`` validates edited arguments against the
    tool's schema (raising ``ValueError``). ``LookupError`` when the user cannot see it
    (another user's: a 404); ``ApprovalRefused`` when it is decided already, needs an
    operator, or the edited arguments do not fit.
    """
    with transaction.atomic():
        rows = ToolApproval.objects.select_for_update(of=("self",)).filter(pk=approval_id)
        if not operator:
            rows = rows.filter(conversation__owner_id=user_id)
        row = rows.first()
        if row is None:
            raise LookupError(approval_id)
        if row.status != ToolApproval.Status.PENDING:
            raise ApprovalRefused("decided", f"this call was {row.status} already")
        if row.approver == "staff" and not operator:
            raise ApprovalRefused("operator", "an operator decides this call, in the admin")
        approved, denied = ToolApproval.Status.APPROVED, ToolApproval.Status.DENIED
        row.status = approved if decision.approve else denied
        row.reason = decision.reason
        if decision.approve and decision.arguments is not None:
            if check is not None:
                try:
                    check(row.parameters, decision.arguments)
                except ValueError as error:
                    raise ApprovalRefused("invalid", str(error)) from None
            row.edited = dict(decision.arguments) != row.arguments
            row.arguments = dict(decision.arguments)
        row.decided_by_id = user_id
        row.decided = timezone.now()
        row.save(update_fields=["status", "reason", "edited", "arguments", "decided_by", "decided"])
        _record(row, f"by {username}")
        ready = run_ready(row.run_id)
        owner_id = Run.objects.filter(pk=row.run_id).values_list(
            "conversation__owner_id", flat=True
        )[0]
    row.decided_by = None
    payload = approval_payload(row)
    payload["decided_by"] = username
    return Outcome(payload, str(row.conversation_id), row.run_id, owner_id, ready)


def _record(row: ToolApproval, by: str) -> None:
    """The decision beside the authority's own, for the operator's audit."""
    AuthorityDecision.objects.create(
        run_id=row.run_id,
        conversation_id=row.conversation_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        arguments=row.arguments,
        rule_id=row.rule_id,
        rule_label=f"{row.rule_label} ({row.status} {by})".strip(),
        zone=row.zone or "default",
        allowed=row.status == ToolApproval.Status.APPROVED,
        reason=row.reason,
    )


def run_ready(run_id: int) -> bool:
    """Whether nothing of the paused run waits any more: every held call decided, every
    question answered (or expired)."""
    return not (
        ToolApproval.objects.filter(run_id=run_id, status=ToolApproval.Status.PENDING).exists()
        or Question.objects.filter(run_id=run_id, status=Question.Status.PENDING).exists()
    )


def expire_due() -> int:
    """Deny the pending approvals whose time ran out; how many."""
    now = timezone.now()
    expired = 0
    for row in ToolApproval.objects.filter(status=ToolApproval.Status.PENDING, expires__lt=now):
        with transaction.atomic():
            updated = ToolApproval.objects.filter(
                pk=row.pk, status=ToolApproval.Status.PENDING
            ).update(
                status=ToolApproval.Status.EXPIRED,
                reason="nobody approved this call in time",
                decided=now,
            )
            if updated:
                row.status = ToolApproval.Status.EXPIRED
                row.reason = "nobody approved this call in time"
                _record(row, "")
                expired += 1
    return expired


def ready_runs() -> list[tuple[int, str, int]]:
    """Paused runs whose every held call is decided: (run id, conversation id, owner id).

    The decider starts the next run at once; this finds the ones it could not (an operator's
    decision in the admin, an expiry, a process that died in between).
    """
    undecided = ToolApproval.objects.filter(run=OuterRef("pk"), status="pending")
    unanswered = Question.objects.filter(run=OuterRef("pk"), status="pending")
    return [
        (run_id, str(conversation_id), owner_id)
        for run_id, conversation_id, owner_id in Run.objects.filter(status__in=PAUSED)
        .filter(~Exists(undecided), ~Exists(unanswered))
        .values_list("pk", "conversation_id", "conversation__owner_id")
    ]


def take_decisions(run_id: int) -> list[Decided] | None:
    """Take the decisions of the paused run ``run_id`` and close it (its slot is then free);
    ``None`` when it is not paused (any more). ``ApprovalsPending`` when a call still waits.
    Call inside the transaction that opens the next run: a refusal must change nothing."""
    if not Run.objects.filter(pk=run_id, status__in=PAUSED).update(status=Run.Status.DONE):
        return None
    rows = list(
        ToolApproval.objects.select_for_update(of=("self",))
        .filter(run_id=run_id, applied=False)
        .select_related("decided_by")
        .order_by("pk")
    )
    if any(row.status == ToolApproval.Status.PENDING for row in rows):
        raise ApprovalsPending(run_id)
    ToolApproval.objects.filter(pk__in=[row.pk for row in rows]).update(applied=True)
    return [
        Decided(
            call_id=row.tool_call_id,
            tool=row.tool_name,
            arguments=row.arguments,
            approved=row.status == ToolApproval.Status.APPROVED,
            reason=row.reason,
            by=row.decided_by.get_username() if row.decided_by is not None else "",
            expired=row.status == ToolApproval.Status.EXPIRED,
        )
        for row in rows
    ]


class ApprovalsPending(Exception):
    """A paused run was asked to go on while one of its calls still waits."""
