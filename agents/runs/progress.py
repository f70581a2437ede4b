"""Which running call a tool's report is about: a run's executing calls, matched by tool
name and arguments (a report knows no call id; its tool knows its own arguments); and what a
tab joining mid-call needs of them (``running``: each call, how long it has run, its card)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orkestrel.core import ToolCall
from orkestrel.protocol import RunningPayload, call_payload

from ..runtime.reports import ToolReport

__all__ = ["RunningCalls"]


class RunningCalls:
    """A run's calls from their start (``tool_execute``) to their end (``tool``).

    A call's first report claims the oldest running call of that tool with those arguments
    that no other call's reports claimed (calls marked safe run side by side, maybe alike);
    its later reports go to the same call. Times are the caller's clock (the loop's).
    """

    __slots__ = ("_calls", "_claims", "_shown", "_since")

    def __init__(self) -> None:
        self._calls: dict[str, ToolCall] = {}
        # Report key -> the call id it claimed.
        self._claims: dict[object, str] = {}
        # Call id -> when it started, and what its card shows now (its latest report).
        self._since: dict[str, float] = {}
        self._shown: dict[str, Any] = {}

    def started(self, calls: Sequence[ToolCall], now: float = 0.0) -> None:
        for call in calls:
            self._calls[call.id] = call
            self._since[call.id] = now

    def shown(self, call_id: str, display: Any) -> None:
        """The call's card shows ``display`` now (a ``tool_progress`` frame went out)."""
        if call_id in self._calls:
            self._shown[call_id] = display

    def running(self, now: float) -> list[RunningPayload]:
        """The calls running at ``now``, in the order they started, with their cards."""
        return [
            {
                "call": call_payload(call),
                "elapsed": round(max(now - self._since.get(id_, now), 0.0), 1),
                "display": self._shown.get(id_),
            }
            for id_, call in self._calls.items()
        ]

    def ended(self, call_id: str) -> None:
        self._since.pop(call_id, None)
        self._shown.pop(call_id, None)
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
