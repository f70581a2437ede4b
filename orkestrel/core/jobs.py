"""Durable agent jobs: the serializable job descriptor and the shared partial policy."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from .chunks import AgentResult
from .errors import AgentJobError

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["AgentJobInput", "settle_agent_job", "validate_job"]


class AgentJobInput(TypedDict):
    """A JSON-serializable agent job: names for the live pieces, data for the rest."""

    provider: str
    messages: list[dict[str, Any]]
    system: NotRequired[str]
    tools: NotRequired[list[str]]
    authority: NotRequired[str]
    scheduler: NotRequired[str]
    limit: NotRequired[int]
    timeout: NotRequired[float]
    budget: NotRequired[int]
    children: NotRequired[list[AgentJobInput]]


_NAMES = ("provider", "authority", "scheduler", "system")


def validate_job(job: object, *, path: str = "job") -> AgentJobInput:
    """Check a job's shape and JSON-serializability; raise ``ValueError`` naming the field."""
    if not isinstance(job, Mapping):
        raise ValueError(f"{path} must be a mapping")
    if not isinstance(job.get("provider"), str) or not job["provider"]:
        raise ValueError(f"{path}.provider must be a provider name")
    for key in _NAMES[1:]:
        if key in job and job[key] is not None and not isinstance(job[key], str):
            raise ValueError(f"{path}.{key} must be a string")
    messages = job.get("messages", [])
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        raise ValueError(f"{path}.messages must be a list of message objects")
    tools = job.get("tools")
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)
    ):
        raise ValueError(f"{path}.tools must be a list of tool names")
    for key in ("limit", "budget"):
        value = job.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ValueError(f"{path}.{key} must be a non-negative integer")
    timeout = job.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ValueError(f"{path}.timeout must be a positive number of seconds")
    children = job.get("children")
    if children is not None:
        if not isinstance(children, list):
            raise ValueError(f"{path}.children must be a list of jobs")
        for index, child in enumerate(children):
            validate_job(child, path=f"{path}.children[{index}]")
    try:
        json.dumps(job)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path} must be JSON-serializable: {error}") from error
    # Every field was checked above: the mapping is an ``AgentJobInput``.
    return cast(AgentJobInput, job)


async def settle_agent_job(agent: Agent, *, allow_partial: bool = False) -> AgentResult:
    """Run ``agent`` to its result; a partial raises ``AgentJobError`` unless allowed."""
    result = await agent.generate()
    if result.partial and not allow_partial:
        raise AgentJobError(result, f"agent job ended partial ({result.stop})")
    return result
