"""Reports on calls still running: what a tool shows on its call's card before its result.

A tool given a run's ``ToolReports`` (``ToolContext.reports``) reports while a call runs (the
``delegate`` tool: its child's progress); the run listens and sends each report to the chat as
a ``tool_progress`` frame. A report names its tool and the call's arguments (the tool knows
them, the run knows its executing calls) and a ``key`` shared by one call's reports, which
tells apart two running calls with the same arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from orkestrel.core import Emitter

__all__ = ["Report", "ToolReport", "ToolReports"]

Report = Callable[[Any], None]
"""One call's report function: called with what its card shows now (a ``display``)."""


@dataclass(frozen=True, slots=True, eq=False)
class ToolReport:
    """What a running call of ``tool`` with ``arguments`` shows now (``display``)."""

    tool: str
    arguments: Mapping[str, Any]
    display: Any
    # One call's execution: every report of that call carries the same object.
    key: object


class ToolReports:
    """Where one run's tools report on their running calls; the run listens with ``on``.

    A listener that raises never reaches the tool (the kit's ``Emitter`` isolates it).
    """

    __slots__ = ("_emitter",)

    def __init__(self) -> None:
        self._emitter: Emitter[Literal["report"]] = Emitter()

    def on(self, listener: Callable[[ToolReport], None]) -> Callable[[], None]:
        """Hear every report; call the returned function to stop."""
        return self._emitter.on("report", listener)

    def reporter(self, tool: str, arguments: Mapping[str, Any]) -> Report:
        """The report function of one call of ``tool`` with ``arguments``."""
        key = object()

        def report(display: Any) -> None:
            self._emitter.emit("report", ToolReport(tool, arguments, display, key))

        return report
