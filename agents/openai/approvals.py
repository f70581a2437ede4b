"""Tool calls an ``ask`` rule holds, as the ``/v1`` APIs show them and take decisions on them.

A run that pauses for a person's approval is never an empty success. The Responses API has
the shape OpenAI's own hosted MCP tools use: the response completes with one
``mcp_approval_request`` item per held call (``server_label`` ``orkestrel``), and the client
answers each with an ``mcp_approval_response`` input item and ``previous_response_id``; its
decisions go through ``RunService.decide`` (as the chat's do), and the run that goes on
answers the new response. Chat completions has no such item: ``409`` ``approval_required``
names the approvals, which stay decidable through ``/api/approvals/``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from conversations.approvals import ApprovalRefused, Decision, pending_approvals
from conversations.models import Run, ToolApproval
from orkestrel.db import in_thread

from ..runs import run_service
from .access import Caller
from .errors import OpenAIError, bad_request

__all__ = [
    "REQUEST_PREFIX",
    "SERVER_LABEL",
    "Answer",
    "HeldCall",
    "approval_required",
    "conversation_waits",
    "decide_held",
    "held_calls",
    "next_run",
]

SERVER_LABEL = "orkestrel"
# An approval request's id is its approval's, behind OpenAI's prefix for them.
REQUEST_PREFIX = "mcpr_"
# How long a decided run may take to go on (the decision starts its next run itself: this
# covers one another process resumes).
NEXT_RUN_SECONDS = 30.0
NEXT_RUN_POLL = (0.02, 0.5)


@dataclass(frozen=True, slots=True)
class HeldCall:
    """A call a run held for approval: its approval's id, the tool, the arguments as JSON,
    who may decide it (``owner`` or ``staff``) and whether it still waits."""

    approval: int
    tool: str
    arguments: str
    approver: str
    pending: bool

    @property
    def request_id(self) -> str:
        return f"{REQUEST_PREFIX}{self.approval}"


@dataclass(frozen=True, slots=True)
class Answer:
    """One ``mcp_approval_response`` input item; ``param`` names it in errors."""

    request_id: str
    approve: bool
    reason: str
    param: str


def held_calls(run_id: int) -> list[HeldCall]:
    """Every call the run ``run_id`` held, decided or not, in the model's order."""
    rows = ToolApproval.objects.filter(run_id=run_id).order_by("pk")
    return [
        HeldCall(
            approval=row.pk,
            tool=row.tool_name,
            arguments=json.dumps(row.arguments, ensure_ascii=False),
            approver=row.approver,
            pending=row.status == ToolApproval.Status.PENDING,
        )
        for row in rows
    ]


def _waiting_text(approvals: Sequence[tuple[int, str]], conversation_id: str) -> str:
    where = f"the run then goes on in conversation {conversation_id}."
    if not approvals:
        return (
            f"A tool call of the agent waits for a person's approval (GET /api/approvals/); {where}"
        )
    calls = "; ".join(f"approval {approval}: {tool}" for approval, tool in approvals)
    return (
        f"A tool call of the agent waits for a person's approval ({calls}). Decide it with "
        f"POST /api/approvals/{approvals[0][0]}/decide/ or in the chat; {where}"
    )


def approval_required(held: Sequence[HeldCall], conversation_id: str) -> OpenAIError:
    """The ``409`` of a chat completion whose run paused, naming each approval's id."""
    waiting = [(call.approval, call.tool) for call in held if call.pending] or [
        (call.approval, call.tool) for call in held
    ]
    return OpenAIError(409, _waiting_text(waiting, conversation_id), code="approval_required")


def conversation_waits(conversation_id: str) -> OpenAIError:
    """The ``409`` of a request into a conversation whose run waits for approvals."""
    waiting = [
        (approval["id"], approval["tool"]) for approval in pending_approvals(conversation_id)
    ]
    return OpenAIError(
        409,
        _waiting_text(waiting, conversation_id)
        + " Answer its mcp_approval_request items with mcp_approval_response input items.",
        param="previous_response_id",
        code="approval_required",
    )


def _check(held: Sequence[HeldCall], answers: Sequence[Answer]) -> list[tuple[HeldCall, Answer]]:
    """Pair each answer with its held call: ``400`` for a request the previous response did
    not make, one answered twice, or a waiting one left out; ``403`` for one only an operator
    may decide. Checked before any decision is taken."""
    by_id = {call.request_id: call for call in held}
    paired: list[tuple[HeldCall, Answer]] = []
    for answer in answers:
        call = by_id.get(answer.request_id)
        where = f"{answer.param}.approval_request_id"
        if call is None:
            raise bad_request(
                f"No approval request with id '{answer.request_id}' in previous_response_id.",
                where,
                "approval_request_not_found",
            )
        if any(seen.approval == call.approval for seen, _ in paired):
            raise bad_request(f"'{answer.request_id}' is answered twice.", where)
        if call.pending and call.approver != "owner":
            raise OpenAIError(
                403,
                f"Approval request '{answer.request_id}' needs an operator's decision, in the "
                "admin.",
                type="permission_error",
                param=where,
                code="approval_needs_operator",
            )
        paired.append((call, answer))
    answered = {call.approval for call, _ in paired}
    missing = [call.request_id for call in held if call.pending and call.approval not in answered]
    if missing:
        raise bad_request(
            "Answer every waiting approval request of previous_response_id: "
            f"{', '.join(missing)} has no mcp_approval_response.",
            "input",
            "approval_response_missing",
        )
    return paired


async def decide_held(caller: Caller, run_id: int, answers: Sequence[Answer]) -> None:
    """Take the client's decisions on the calls run ``run_id`` holds, through the run
    service (every tab sees them; the run goes on once all are in). A call decided meanwhile
    (in the chat, the API or the admin) keeps that decision."""
    held = await in_thread(held_calls)(run_id)
    for call, answer in _check(held, answers):
        if not call.pending:
            continue
        try:
            await run_service.decide(
                user_id=caller.user_id,
                username=caller.username,
                approval_id=call.approval,
                decision=Decision(approve=answer.approve, reason=answer.reason),
            )
        except ApprovalRefused as error:
            if error.code != "decided":
                raise bad_request(
                    str(error), f"{answer.param}.approval_request_id", "approval_refused"
                ) from None
        except LookupError:
            raise bad_request(
                f"No approval request with id '{answer.request_id}' of yours.",
                f"{answer.param}.approval_request_id",
                "approval_request_not_found",
            ) from None


def _later_run(conversation_id: str, after: int) -> int | None:
    return (
        Run.objects.filter(conversation_id=conversation_id, pk__gt=after)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )


async def next_run(conversation_id: str, after: int) -> int:
    """The run that went on after the paused run ``after`` (its decisions started it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + NEXT_RUN_SECONDS
    delay, longest = NEXT_RUN_POLL
    while (found := await in_thread(_later_run)(conversation_id, after)) is None:
        if loop.time() > deadline:
            raise OpenAIError(
                500,
                f"The agent did not go on after the decisions; see conversation "
                f"{conversation_id} in the chat.",
                type="server_error",
                code="not_resumed",
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, longest)
    return found
