"""Which running call a tool's report is about: a run's executing calls, matched by tool
name and arguments (a report knows no call id; its tool knows its own arguments)."""

from __future__ import annotations

from collections.abc import Sequence

from orkestrel.core import ToolCall

from ..runtime.reports import ToolReport

__all__ = ["RunningCalls"]


class RunningCalls:
    """A run's calls from their start (``tool_execute``) to their end (``tool``).

    A call's first report claims the oldest running call of that tool with those arguments
    that no other call's reports claimed (calls marked safe run side by side, maybe alike);
    its later reports go to the same call.
    """

    __slots__ = ("_calls", "_claims")

    def __init__(self) -> None:
        self._calls: dict[str, ToolCall] = {}
        # Report key -> the call id it claimed.
        self._claims: dict[object, str] = {}

    def started(self, calls: Sequence[ToolCall]) -> None:
        for call in calls:
            self._calls[call.id] = call

    def ended(self, call_id: str) -> None:
        if self._calls.pop(call_id, None) is not None:
            self._claims = {key: id_ for key, id_ in self._claims.items() if id_ != call_id}

    def call_of(self, report: ToolReport) -> ToolCall | None:
        """The running call ``report`` is about, or ``None`` (it ended, or never ran here)."""
        claimed = self._claims.get(report.key)
        if claimed is not None:
            return self._calls.get(claimed)
        taken = set(self._claims.values())
        for call in self._calls.values():
            if (
                call.id not in taken
                and call.name == report.tool
                and call.arguments == report.arguments
            ):
                self._claims[report.key] = call.id
                return call
        return None
