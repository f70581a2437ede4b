"""The tools ``/mcp`` offers: one per agent profile the caller may use, named by its slug.

A tool takes ``{"message": string, "conversation": optional string}`` and answers the
agent's reply as text, with ``structuredContent`` holding the ``conversation`` id (pass it
back to go on with the same conversation), the ``run`` and its ``usage``. A call that cannot
run (an unknown or forbidden profile, a conversation that is not the caller's, a busy one) is
an ``isError`` result saying why: nothing ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from conversations.models import Conversation
from conversations.services import enabled_profiles
from orkestrel.db import parse_id
from orkestrel.protocol import UsagePayload

from ..models import AgentProfile

__all__ = [
    "INPUT_SCHEMA",
    "OUTPUT_SCHEMA",
    "Ask",
    "ToolRefused",
    "answer",
    "conversation_check",
    "parse_ask",
    "refused",
    "tool_of",
    "usable_profiles",
    "usable_slug",
    "usage_sum",
]

MESSAGE_LIMIT = 1_000_000
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the agent."},
        "conversation": {
            "type": "string",
            "description": (
                "A conversation id an earlier call of this tool answered with: the agent goes "
                "on with that conversation. Leave it out to start a new one."
            ),
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}
_COUNT = {"type": "integer", "minimum": 0}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "conversation": {"type": "string", "description": "Pass it back to go on with it."},
        "run": {"type": "integer", "description": "The run that answered (in the API)."},
        "status": {"type": "string", "description": "done, or partial when a bound cut it."},
        "usage": {
            "type": "object",
            "properties": {
                "prompt": _COUNT,
                "completion": _COUNT,
                "total": _COUNT,
                "cache_read": _COUNT,
                "cache_write": _COUNT,
                "reasoning": _COUNT,
                "cost": {"type": ["string", "null"], "description": "USD; null: no price."},
            },
            "required": ["prompt", "completion", "total"],
        },
    },
    "required": ["conversation", "run", "usage"],
}
# An agent may write files, run commands and call services: no safety hints to promise.
ANNOTATIONS = ToolAnnotations(read_only_hint=False, open_world_hint=True)


class ToolRefused(Exception):
    """A call that cannot run; ``code`` names why, the message is what the client reads."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Ask:
    """A tool call's arguments: the message, and the conversation to go on with (if any)."""

    message: str
    conversation: str | None


def usable_profiles(user_id: int) -> list[AgentProfile]:
    """The profiles ``user_id`` may use, in the order ``/v1/models`` lists them."""
    return list(enabled_profiles(user_id))


def usable_slug(user_id: int, slug: str) -> bool:
    """Whether ``slug`` names an enabled profile ``user_id`` may use."""
    profiles: QuerySet[AgentProfile] = enabled_profiles(user_id)
    return profiles.filter(slug=slug).exists()


def tool_of(profile: AgentProfile) -> Tool:
    """The tool a profile is."""
    description = profile.description.strip() or f"Ask the agent {profile.name!r}."
    return Tool(
        name=profile.slug,
        title=profile.name,
        description=(
            f"{description}\n\nAnswers with the agent's reply; pass the `conversation` it "
            "returns to go on with the same conversation."
        ),
        input_schema=INPUT_SCHEMA,
        output_schema=OUTPUT_SCHEMA,
        annotations=ANNOTATIONS,
    )


def parse_ask(arguments: Mapping[str, Any] | None) -> Ask:
    """The call's arguments (``ToolRefused`` ``invalid_arguments`` saying what is wrong)."""
    arguments = arguments or {}
    unknown = sorted(set(arguments) - {"message", "conversation"})
    if unknown:
        raise ToolRefused("invalid_arguments", f"Unknown arguments: {', '.join(unknown)}.")
    message = arguments.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolRefused("invalid_arguments", "`message` must be a non-empty string.")
    if len(message) > MESSAGE_LIMIT:
        raise ToolRefused(
            "invalid_arguments", f"`message` is longer than {MESSAGE_LIMIT} characters."
        )
    if "\x00" in message:
        raise ToolRefused("invalid_arguments", "`message` holds a NUL character.")
    conversation = arguments.get("conversation")
    if conversation is not None and not isinstance(conversation, str):
        raise ToolRefused("invalid_arguments", "`conversation` must be a string.")
    return Ask(message=message, conversation=conversation or None)


def conversation_check(user_id: int, conversation: str, slug: str) -> str:
    """``conversation``'s id, once it is known to be the user's, with this agent
    (``ToolRefused`` otherwise)."""
    parsed = parse_id(conversation.lower())
    found = (
        Conversation.objects.filter(pk=parsed, owner_id=user_id).values("profile__slug").first()
        if parsed is not None
        else None
    )
    if found is None:
        # Another user's conversation reads as no conversation: ids are not disclosed.
        raise ToolRefused("unknown_conversation", f"No conversation {conversation!r} of yours.")
    if found["profile__slug"] != slug:
        other = found["profile__slug"]
        raise ToolRefused(
            "other_agent",
            f"Conversation {conversation!r} is with the agent {other!r}: call the tool "
            f"{other!r} to go on with it."
            if other
            else f"Conversation {conversation!r} has no agent of its own: start a new one.",
        )
    return str(parsed)


def refused(code: str, message: str, **structured: Any) -> CallToolResult:
    """An ``isError`` result: what the client reads, and the reason's ``code``."""
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        structured_content={"error": {"code": code, "message": message}, **structured},
        is_error=True,
    )


def usage_sum(usages: Sequence[UsagePayload]) -> UsagePayload:
    """The usage of several runs (one answer that paused for approvals), added up; the cost
    is unknown when any run's is."""
    costs = [usage["cost"] for usage in usages]
    return {
        "prompt": sum(usage["prompt"] for usage in usages),
        "completion": sum(usage["completion"] for usage in usages),
        "total": sum(usage["total"] for usage in usages),
        "cache_read": sum(usage["cache_read"] for usage in usages),
        "cache_write": sum(usage["cache_write"] for usage in usages),
        "reasoning": sum(usage["reasoning"] for usage in usages),
        "cost": (
            None
            if any(cost is None for cost in costs)
            else str(sum((Decimal(cost) for cost in costs if cost is not None), Decimal(0)))
        ),
    }


def answer(
    text: str, *, conversation: str, run: int, status: str, usage: UsagePayload
) -> CallToolResult:
    """The agent's answer: its text, and where to go on from."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={
            "conversation": conversation,
            "run": run,
            "status": status,
            "usage": dict(usage),
        },
    )
