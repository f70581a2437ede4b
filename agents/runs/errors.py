"""Why a run cannot start: the refusals every front door maps to its own answer."""

from __future__ import annotations

from orkestrel.refusals import Refusal

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


class Busy(RuntimeError, Refusal):
    """A run is already streaming on this conversation (in this process or another)."""

    code = "busy"
    status_code = 409


class AwaitingApproval(Busy):
    """The conversation's run waits for a person to decide its held tool calls."""


class NotPaused(LookupError, Refusal):
    """A run was to go on after its approvals, but it is not waiting (any more)."""

    code = "not_paused"
    status_code = 409


class TooManyRuns(RuntimeError, Refusal):
    """The user has as many runs going as ``ORKESTREL["MAX_RUNS_PER_USER"]`` allows."""

    code = "too_many_runs"
    status_code = 429


class StartFailed(RuntimeError, Refusal):
    """The run could not be built (its profile's provider, tools or policy); it ended as an
    error, the user message stays stored."""

    code = "run_failed"
    status_code = 502
    public_detail = "The agent could not be started."


class ToolClash(ValueError, Refusal):
    """A tool the client brought has the name of one of the profile's tools."""

    code = "tool_name_clash"
    field = "tools"

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            "tool names clash with the profile's own tools: " + ", ".join(sorted(names))
        )
        self.names = sorted(names)


class UnknownProfile(LookupError, Refusal):
    """No enabled agent profile has the slug a request named."""

    code = "unknown_profile"
    status_code = 404


class UnknownToolCall(LookupError, Refusal):
    """A tool result names a call the conversation is not waiting for."""

    code = "unknown_call_id"

    def __init__(self, call_id: str) -> None:
        super().__init__(f"no tool call {call_id!r} is waiting for its result")
        self.call_id = call_id


class NothingToContinue(ValueError, Refusal):
    """``/continue`` (or an empty message) on a conversation with nothing to answer yet."""

    code = "nothing_to_continue"
    field = "content"


class ProfileForbidden(PermissionError, Refusal):
    """The profile exists, but operators have not given this user access to it."""

    code = "profile_forbidden"
    status_code = 403


class NothingPending(LookupError, Refusal):
    """A start from the pending messages found none (another start took them)."""

    code = "nothing_pending"
    status_code = 409
