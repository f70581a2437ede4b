"""The ``delegate`` built-in: the agent hands a task to another profile's agent, a child run.

The child runs as an agent job (on Celery workers when they are configured), which is why the
work of starting, following and stopping it belongs to a ``Delegator`` the job service gives
(this layer sits below it). The child shares its parent's bounds: its token budget is what the
parent has left and its timeout what is left of the parent's deadline; once it has settled,
everything its tree used is charged to the parent's budget. A parent that stops while the
child runs (cancelled, timed out, out of budget, failed) cancels the child. The child's answer
is the call's result; its job id goes to the tool card (``display``), never to the model.

Without a delegator (a run the job service did not build) the tool answers every call with
an error the model reads.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from orkestrel.core import Agent, TokenBudget, TokenUsage, Tool, create_tool

from ..registry import ToolContext

__all__ = [
    "DESCRIPTION",
    "NAME",
    "PARAMETERS",
    "SAFE",
    "Delegated",
    "Delegation",
    "Delegator",
    "ParentBounds",
    "create_delegate_tool",
    "job_display",
]

NAME = "delegate"
# The child may write with its own tools: the call counts as a write (read-only mode refuses).
SAFE = False
MAX_TASK_CHARS = 20_000

DESCRIPTION = (
    "Hand a self-contained task to another agent profile and get its answer back. The other "
    "agent sees only `task` (not this conversation): say everything it needs. It shares your "
    "token budget and your time limit. Only the profiles you may delegate to are accepted."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "profile": {
            "type": "string",
            "minLength": 1,
            "maxLength": 100,
            "description": "The slug of the agent profile to hand the task to.",
        },
        "task": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TASK_CHARS,
            "description": "The whole task, as the other agent's only message.",
        },
    },
    "required": ["profile", "task"],
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegation:
    """One child run a call asks for: the profile, the task, and the parent's bounds left
    (``None``: the parent has none, the child's profile decides)."""

    profile: str
    task: str
    budget: int | None
    timeout: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegated:
    """How a child settled: its job, status, answer, error, and the tokens its tree used."""

    job_id: str
    status: str
    content: str
    error: str = ""
    used: int = 0


class Delegator(Protocol):
    """Starts, follows and stops child runs (the job service's side of the tool)."""

    async def start(self, delegation: Delegation) -> str:
        """Start the child; its job id. ``LookupError``/``PermissionError`` say why not."""
        ...

    async def wait(self, job_id: str) -> Delegated:
        """Wait until the child has settled."""
        ...

    async def cancel(self, job_id: str) -> None:
        """Stop the child (and what it delegated in turn)."""
        ...


class ParentBounds:
    """What the parent agent has left: tokens of its budget, seconds of its deadline.

    The deadline starts with the agent's run (its ``start`` event), as the kit's own does.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.started = time.monotonic()
        agent.emitter.on("start", self._start)

    def _start(self, *_: object) -> None:
        self.started = time.monotonic()

    def budget(self) -> int | None:
        budget = self.agent.budget
        if not isinstance(budget, TokenBudget):
            # A budget in other units (a request's completion cap) has no token count to pass.
            return None
        return max(0, math.floor(budget.max - budget.consumed))

    def timeout(self) -> float | None:
        seconds = self.agent.timeout
        if seconds is None:
            return None
        return max(0.0, seconds - (time.monotonic() - self.started))

    def charge(self, tokens: int) -> None:
        """Count what the child's tree used against the parent's budget."""
        if tokens > 0 and self.agent.budget is not None:
            self.agent.budget.consume(TokenUsage(0, tokens, tokens))


def job_display(job_id: str, profile: str, status: str) -> dict[str, Any]:
    """What the tool card shows of a child: its profile, status and job (``url``: its JSON)."""
    return {
        "kind": "delegate",
        "profile": profile,
        "status": status,
        "job": job_id,
        "url": f"/api/jobs/{job_id}/",
    }


def create_delegate_tool(
    context: ToolContext,
    delegator: Delegator | None = None,
    bounds: ParentBounds | None = None,
) -> Tool:
    """The ``delegate`` tool of one run: children through ``delegator``, within ``bounds``."""

    async def execute(arguments: Mapping[str, Any]) -> Any:
        if delegator is None:
            raise RuntimeError("delegation is not available in this run")
        profile = str(arguments.get("profile") or "")
        task = str(arguments.get("task") or "")
        budget = bounds.budget() if bounds is not None else None
        timeout = bounds.timeout() if bounds is not None else None
        if budget == 0:
            raise RuntimeError("no token budget is left to delegate with")
        if timeout is not None and timeout < 1.0:
            raise RuntimeError("no time is left to delegate in")
        job_id = await delegator.start(
            Delegation(profile=profile, task=task, budget=budget, timeout=timeout)
        )
        try:
            child = await delegator.wait(job_id)
        except BaseException:
            # The parent stopped (cancelled, out of time or budget) or failed: so does the child.
            await asyncio.shield(delegator.cancel(job_id))
            raise
        if bounds is not None:
            bounds.charge(child.used)
        display = job_display(job_id, profile, child.status)
        if child.status in ("done", "partial"):
            return {"result": child.content, "display": display}
        reason = child.error or "no answer"
        return {"result": f"The delegated job ended {child.status}: {reason}", "display": display}

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
