"""Delegation: a job's ``delegate`` calls start child jobs through the job service.

A child is an agent job like any other (on the workers when they are configured, else in the
process running its parent), on a profile its parent's profile may delegate to and the user
may use, with the parent's bounds left (``agents.runtime.builtins.delegate``) lowered to the
child's profile's own caps (``agents.runtime.caps``), as deep as
``ORKESTREL["DELEGATE_MAX_DEPTH"]`` (2: a child may delegate once more). It runs with partial
answers allowed: a child cut short by the shared budget still reports what it has.

A chat or API run delegates the same way (``register_delegate``, once the server wires it): its
children are jobs one level down, on the profiles its conversation's profile may delegate to.
While a run's child runs, its card follows the child's row (``JobDelegator.peek``: one query
every ``ORKESTREL["DELEGATE_PROGRESS_SECONDS"]``, 1 s by default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from django.conf import settings

from conversations.models import Conversation
from orkestrel.core import Agent, Tool
from orkestrel.db import in_thread

from ..models import AgentJob, AgentProfile
from ..runtime.builtins import delegate
from ..runtime.builtins.delegate import ChildState, Delegated, Delegation, ParentBounds
from ..runtime.caps import Bounds, Caps
from ..runtime.progress import Progress
from ..runtime.registry import BuiltinTool, ToolContext, ToolRegistry, builtin_tools
from .records import JobRequest, JobSpec, tree_usage

__all__ = [
    "MAX_DEPTH",
    "ChildJobs",
    "JobDelegator",
    "Parent",
    "child_request",
    "child_state",
    "job_tools",
    "register_delegate",
]

# How many delegations deep a tree may go (``ORKESTREL["DELEGATE_MAX_DEPTH"]``).
MAX_DEPTH = 2
# How often a run's card looks at its running child (``ORKESTREL["DELEGATE_PROGRESS_SECONDS"]``).
PROGRESS_SECONDS = delegate.PROGRESS_SECONDS


class ChildJobs(Protocol):
    """What delegation needs of the job service."""

    async def enqueue(self, *, user_id: int, request: JobRequest) -> AgentJob: ...
    async def wait(self, job_id: str) -> AgentJob: ...
    async def stop(self, job_id: str) -> None: ...


def max_depth() -> int:
    return int(getattr(settings, "ORKESTREL", {}).get("DELEGATE_MAX_DEPTH", MAX_DEPTH))


def progress_seconds() -> float:
    options = getattr(settings, "ORKESTREL", {})
    return float(options.get("DELEGATE_PROGRESS_SECONDS", PROGRESS_SECONDS))


def child_state(job_id: str) -> ChildState | None:
    """The job as its row has it now, in one query of three columns (``None``: gone)."""
    found = AgentJob.objects.filter(pk=job_id).values_list("status", "attempts", "progress").first()
    if found is None:
        return None
    status, attempts, progress = found
    return ChildState(status=status, attempts=attempts, progress=Progress.of(progress))


@dataclass(frozen=True, slots=True, kw_only=True)
class Parent:
    """Who delegates: a job (``job_id``, its ``profile_id`` and ``depth``) or a chat or API run
    (its ``conversation_id``: the conversation's profile delegates, from depth 0)."""

    user_id: int
    profile_id: int | None = None
    job_id: str | None = None
    conversation_id: str | None = None
    depth: int = 0

    @classmethod
    def of_job(cls, spec: JobSpec) -> Parent:
        return cls(
            user_id=spec.user_id,
            profile_id=spec.profile.pk,
            job_id=spec.record.id,
            depth=spec.depth,
        )


def child_request(parent: Parent, delegation: Delegation) -> JobRequest:
    """The child job a parent's call asks for, within what the parent has left and its own
    profile's caps; ``PermissionError`` or ``LookupError`` if the tree is as deep as allowed
    or the profile is not one the parent may delegate to."""
    limit = max_depth()
    if parent.depth >= limit:
        raise PermissionError(f"delegation goes at most {limit} levels deep")
    profile_id = parent.profile_id
    if profile_id is None and parent.conversation_id is not None:
        profile_id = (
            Conversation.objects.filter(id=parent.conversation_id, owner_id=parent.user_id)
            .values_list("profile_id", flat=True)
            .first()
        )
    target = (
        AgentProfile.objects.usable_by(parent.user_id)
        .filter(delegated_from=profile_id, slug=delegation.profile, enabled=True)
        .first()
        if profile_id is not None
        else None
    )
    if target is None:
        raise LookupError(f"{delegation.profile!r} is not a profile this agent may delegate to")
    # What the parent has left, lowered to the child's own profile: a child never gets more
    # than its operator allows, however much its parent had.
    bounds = Caps.of(target).clamp(Bounds(budget=delegation.budget, timeout=delegation.timeout))
    return JobRequest(
        profile=target,
        messages=[{"role": "user", "content": delegation.task}],
        budget=bounds.budget,
        timeout=bounds.timeout,
        allow_partial=True,
        parent=parent.job_id,
        depth=parent.depth + 1,
    )


class JobDelegator:
    """The ``Delegator`` of one job or run: its children are jobs of the same user."""

    def __init__(self, jobs: ChildJobs, parent: Parent) -> None:
        self.jobs = jobs
        self.parent = parent

    async def start(self, delegation: Delegation) -> str:
        request = await in_thread(child_request)(self.parent, delegation)
        row = await self.jobs.enqueue(user_id=self.parent.user_id, request=request)
        return str(row.pk)

    async def wait(self, job_id: str) -> Delegated:
        row = await self.jobs.wait(job_id)
        used = await in_thread(tree_usage)(job_id)
        result = row.result if isinstance(row.result, dict) else {}
        return Delegated(
            job_id=job_id,
            status=row.status,
            content=str(result.get("content") or ""),
            error=row.error,
            used=used,
            attempts=row.attempts,
            progress=Progress.of(row.progress),
        )

    async def cancel(self, job_id: str) -> None:
        await self.jobs.stop(job_id)

    async def peek(self, job_id: str) -> ChildState | None:
        return await in_thread(child_state)(job_id)


def _bound(delegator: JobDelegator, bounds: ParentBounds | None) -> Callable[[ToolContext], Tool]:
    return partial(delegate.create_delegate_tool, delegator=delegator, bounds=bounds)


def _register(registry: ToolRegistry, factory: Callable[[ToolContext], Tool]) -> BuiltinTool:
    return registry.register(
        delegate.NAME,
        factory,
        description=delegate.DESCRIPTION,
        parameters=delegate.PARAMETERS,
        safe=delegate.SAFE,
    )


def register_delegate(jobs: ChildJobs, registry: ToolRegistry = builtin_tools) -> BuiltinTool:
    """Bind the ``delegate`` built-in of chat and API runs to ``jobs`` (the job service).

    A run's tool context names no agent, so its children get their own profiles' bounds, not
    what the run has left; they are cancelled with the run (its call is).
    """

    def factory(context: ToolContext) -> Tool:
        parent = Parent(user_id=context.user_id, conversation_id=context.conversation_id)
        bounds = ParentBounds(context.agent) if context.agent is not None else None
        return delegate.create_delegate_tool(
            context, JobDelegator(jobs, parent), bounds, every=progress_seconds()
        )

    return _register(registry, factory)


def job_tools(agent: Agent, delegator: JobDelegator | None) -> ToolRegistry:
    """The built-ins for one job's agent: the process's, with ``delegate`` bound to the job
    (its delegator, and its agent's budget and deadline)."""
    registry = ToolRegistry()
    for name in builtin_tools.names():
        entry = builtin_tools.get(name)
        if entry is not None:
            registry.register(
                name,
                entry.factory,
                description=entry.description,
                parameters=entry.parameters,
                safe=entry.safe,
            )
    if delegator is not None and delegate.NAME in builtin_tools:
        _register(registry, _bound(delegator, ParentBounds(agent)))
    return registry
