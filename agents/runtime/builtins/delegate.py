"""The ``delegate`` built-in: the agent hands a task to another profile's agent, a child run.

The child runs as an agent job (on Celery workers when they are configured), which is why the
work of starting, following and stopping it belongs to a ``Delegator`` the job service gives
(this layer sits below it). The child shares its parent's bounds: its token budget is what the
parent has left and its timeout what is left of the parent's deadline, each lowered further to
its own profile's cap where that is less (``agents.runtime.caps``); once it has settled,
everything its tree used is charged to the parent's budget. A parent that stops while the
child runs (cancelled, timed out, out of budget, failed) cancels the child. The child's answer
is the call's result; its job id goes to the tool card (``display``), never to the model.

While the child runs, a run that shows its calls (its ``ToolContext.reports``) hears the
child's display (status, attempt, progress) as soon as it started and whenever its row changed,
looked up every ``every`` seconds (one query each) until the wait ends.

Without a delegator (a run the job service did not build) the tool answers every call with
an error the model reads.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from orkestrel.core import Agent, TokenBudget, TokenUsage, Tool, create_tool

from ..progress import Progress
from ..registry import ToolContext
from ..reports import Report

__all__ = [
    "DESCRIPTION",
    "NAME",
    "PARAMETERS",
    "PROGRESS_SECONDS",
    "SAFE",
    "ChildState",
    "Delegated",
    "Delegation",
    "Delegator",
    "ParentBounds",
    "create_delegate_tool",
    "follow_child",
    "job_display",
]

NAME = "delegate"
# The child may write with its own tools: the call counts as a write (read-only mode refuses).
SAFE = False
MAX_TASK_CHARS = 20_000
# How often a running child's row is looked at for its card (the row changes once a heartbeat).
PROGRESS_SECONDS = 1.0

logger = logging.getLogger(__name__)

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
    """How a child settled: its job, status, answer, error, the tokens its tree used, and its
    last progress."""

    job_id: str
    status: str
    content: str
    error: str = ""
    used: int = 0
    attempts: int = 0
    progress: Progress = field(default_factory=Progress)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildState:
    """A child as its row has it now: its status, the attempts started, its progress."""

    status: str
    attempts: int
    progress: Progress


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

    async def peek(self, job_id: str) -> ChildState | None:
        """The child as it is now (``None``: gone); one cheap look, called while it runs."""
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


def job_display(
    job_id: str,
    profile: str,
    status: str,
    *,
    attempt: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """What the tool card shows of a child: its profile, status, attempts started, progress
    and job (``url``: its JSON), while it runs and once it settled."""
    return {
        "kind": "delegate",
        "profile": profile,
        "status": status,
        "attempt": attempt,
        "progress": (progress or Progress()).payload(),
        "job": job_id,
        "url": f"/api/jobs/{job_id}/",
    }


async def follow_child(
    delegator: Delegator, job_id: str, profile: str, report: Report, every: float
) -> None:
    """Report the child's display now and whenever it changed, looking every ``every`` s;
    until cancelled (the wait ended)."""
    shown: dict[str, Any] | None = None
    while True:
        try:
            state = await delegator.peek(job_id)
        except Exception:  # noqa: BLE001 - a card's progress is not worth failing the call
            logger.debug("looking at delegated job %s failed", job_id, exc_info=True)
            state = None
        if state is not None:
            display = job_display(
                job_id, profile, state.status, attempt=state.attempts, progress=state.progress
            )
            if display != shown:
                report(display)
                shown = display
        await asyncio.sleep(every)


async def _stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def create_delegate_tool(
    context: ToolContext,
    delegator: Delegator | None = None,
    bounds: ParentBounds | None = None,
    *,
    every: float = PROGRESS_SECONDS,
) -> Tool:
    """The ``delegate`` tool of one run: children through ``delegator``, within ``bounds``;
    a running child's card refreshed every ``every`` seconds (when the run shows its calls)."""

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
        following = (
            asyncio.create_task(
                follow_child(
                    delegator, job_id, profile, context.reports.reporter(NAME, arguments), every
                ),
                name=f"delegate-progress:{job_id}",
            )
            if context.reports is not None
            else None
        )
        try:
            try:
                child = await delegator.wait(job_id)
            finally:
                await _stop(following)
        except BaseException:
            # The parent stopped (cancelled, out of time or budget) or failed: so does the child.
            await asyncio.shield(delegator.cancel(job_id))
            raise
        if bounds is not None:
            bounds.charge(child.used)
        display = job_display(
            job_id, profile, child.status, attempt=child.attempts, progress=child.progress
        )
        if child.status in ("done", "partial"):
            return {"result": child.content, "display": display}
        reason = child.error or "no answer"
        return {"result": f"The delegated job ended {child.status}: {reason}", "display": display}

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
