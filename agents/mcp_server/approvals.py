"""Tool calls an ``ask`` rule holds, as an MCP client sees them.

A client that declares it can answer (the ``elicitation`` capability) is asked in a form: on
the 2026-07-28 revision as an input-required result (the call is retried with the answers),
on earlier ones as an ``elicitation/create`` request during the call. Accepting approves the
held call, declining denies it (the run goes on and the model reads the refusal);
dismissing the form (``cancel``) leaves it waiting. A client that cannot answer gets an
``isError`` result naming each approval's id, to decide in the chat or the API.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.types import (
    ClientCapabilities,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
)

from conversations.approvals import Decision, approval_payload
from conversations.models import ToolApproval
from orkestrel.protocol import ApprovalPayload

__all__ = [
    "FORM_SCHEMA",
    "Hold",
    "can_answer",
    "decision_of",
    "elicit_request",
    "elicitation",
    "held_calls",
    "input_key",
    "waiting_text",
]

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Run this call",
            "description": "Leave it on to let the call run; turn it off to refuse it.",
            "default": True,
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "When you refuse: what the agent reads.",
        },
    },
}
ARGUMENTS_SHOWN = 2_000


def held_calls(run_id: int) -> list[ApprovalPayload]:
    """The calls the run ``run_id`` holds, still waiting for a decision, in the model's order."""
    rows = ToolApproval.objects.filter(
        run_id=run_id, status=ToolApproval.Status.PENDING
    ).select_related("decided_by")
    return [approval_payload(row) for row in rows.order_by("pk")]


def can_answer(capabilities: ClientCapabilities | None) -> bool:
    """Whether the client declared it can answer a form (elicitation in form mode; an empty
    ``elicitation`` capability means form mode, as before modes existed)."""
    if capabilities is None or capabilities.elicitation is None:
        return False
    modes = capabilities.elicitation
    return modes.form is not None or modes.url is None


def input_key(approval: ApprovalPayload) -> str:
    """The key of an approval's input request in an input-required result."""
    return f"approval-{approval['id']}"


def elicitation(approval: ApprovalPayload, agent: str) -> ElicitRequestFormParams:
    """The form asking the user to decide one held call."""
    arguments = json.dumps(approval["arguments"], ensure_ascii=False, sort_keys=True)
    if len(arguments) > ARGUMENTS_SHOWN:
        arguments = arguments[:ARGUMENTS_SHOWN] + "…"
    return ElicitRequestFormParams(
        message=(
            f"The agent {agent!r} asks to call {approval['tool']!r} with {arguments} "
            f"(approval {approval['id']}, rule {approval['rule']}). Accept to let it run; "
            "decline to refuse it."
        ),
        requested_schema=FORM_SCHEMA,
    )


def elicit_request(approval: ApprovalPayload, agent: str) -> ElicitRequest:
    """The form as an input request of an input-required result."""
    return ElicitRequest(params=elicitation(approval, agent))


def decision_of(result: ElicitResult | None) -> Decision | None:
    """The decision a form's answer makes; ``None`` when the user dismissed it (or no answer
    came): the call keeps waiting."""
    if result is None or result.action == "cancel":
        return None
    if result.action == "decline":
        return Decision(approve=False)
    content = result.content or {}
    reason = content.get("reason")
    reason = reason.strip() if isinstance(reason, str) else ""
    if content.get("approve") is False:
        return Decision(approve=False, reason=reason)
    return Decision(approve=True)


def waiting_text(approvals: Sequence[ApprovalPayload], conversation: str, why: str) -> str:
    """Why the answer waits, naming each held call's approval id and where to decide it."""
    calls = "; ".join(
        f"approval {approval['id']}: {approval['tool']} "
        f"{json.dumps(approval['arguments'], ensure_ascii=False, sort_keys=True)[:200]}"
        + (" (an operator decides it, in the admin)" if approval["approver"] == "staff" else "")
        for approval in approvals
    )
    return (
        f"{why} The agent waits for a decision on {calls}. Decide in orkestrel's chat, or "
        "with POST /api/approvals/<id>/decide/; the agent then goes on in conversation "
        f"{conversation}."
    )


@dataclass(frozen=True, slots=True)
class Hold:
    """What an input-required result asks to come back with (its ``requestState``, sealed by
    the SDK): the conversation, the runs of the answer so far, the approvals asked (or the
    questions the model asked: ``agents.mcp_server.questions``)."""

    conversation: str
    runs: tuple[int, ...]
    approvals: tuple[int, ...]
    questions: tuple[int, ...] = ()

    def encode(self) -> str:
        return json.dumps(
            {
                "conversation": self.conversation,
                "runs": self.runs,
                "approvals": self.approvals,
                "questions": self.questions,
            }
        )

    @classmethod
    def decode(cls, text: str) -> Hold:
        """The state this server minted (the SDK verified its seal); ``ValueError`` if not."""
        data = json.loads(text)
        runs, approvals = data["runs"], data["approvals"]
        questions = data.get("questions", [])
        if not (
            isinstance(data["conversation"], str)
            and isinstance(runs, list)
            and runs
            and all(isinstance(run, int) for run in runs)
            and isinstance(approvals, list)
            and all(isinstance(approval, int) for approval in approvals)
            and isinstance(questions, list)
            and all(isinstance(question, int) for question in questions)
        ):
            raise ValueError("not a hold")
        return cls(data["conversation"], tuple(runs), tuple(approvals), tuple(questions))
