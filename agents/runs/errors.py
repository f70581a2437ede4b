"""Why a run cannot start: the refusals every front door maps to its own answer."""

from __future__ import annotations

__all__ = [
    "AwaitingApproval",
    "Busy",
    "NotPaused",
    "NothingPending",
    "NothingToContinue",
    "ProfileForbidden",
    "StartFailed",
    "ToolClash",
    "TooManyRuns",
    "UnknownProfile",
    "UnknownToolCall",
]


class Busy(RuntimeError):
    """A run is already streaming on this conversation (in this process or another)."""


class AwaitingApproval(Busy):
    """The conversation's run waits for a person to decide its held tool calls."""


class NotPaused(LookupError):
    """A run was to go on after its approvals, but it is not waiting (any more)."""


class TooManyRuns(RuntimeError):
    """The user has as many runs going as ``ORKESTREL["MAX_RUNS_PER_USER"]`` allows."""


class StartFailed(RuntimeError):
    """The run could not be built (its profile's provider, tools or policy); it ended as an
    error, the user message stays stored."""


class ToolClash(ValueError):
    """A tool the client brought has the name of one of the profile's tools."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            "tool names clash with the profile's own tools: " + ", ".join(sorted(names))
        )
        self.names = sorted(names)


class UnknownProfile(LookupError):
    """No enabled agent profile has the slug a request named."""


class UnknownToolCall(LookupError):
    """A tool result names a call the conversation is not waiting for."""

    def __init__(self, call_id: str) -> None:
        super().__init__(f"no tool call {call_id!r} is waiting for its result")
        self.call_id = call_id


class NothingToContinue(ValueError):
    """``/continue`` (or an empty message) on a conversation with nothing to answer yet."""


class ProfileForbidden(PermissionError):
    """The profile exists, but operators have not given this user access to it."""


class NothingPending(LookupError):
    """A start from the pending messages found none (another start took them)."""
