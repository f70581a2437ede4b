"""The tool manager of a chat run: it says when calls start, and keeps held ones from running.

The kit runs a turn's calls through ``ToolManager.execute`` in ordered batches; this subclass
tells ``on_start`` of each batch just before it runs (a run's ``tool_execute`` frames) and
answers a call its approval gate holds with the gate's placeholder instead of running it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, overload

from orkestrel.core import ToolCall, ToolCallInput, ToolManager, ToolResult

__all__ = ["CallGate", "Gates", "RunTools", "StartListener"]

StartListener = Callable[[Sequence[ToolCall]], None]
"""Told of the calls about to run, in the model's order."""


class CallGate(Protocol):
    """Which calls must not run yet, and what the model reads for them meanwhile."""

    def holds(self, call: ToolCall) -> bool: ...

    def placeholder(self, call: ToolCall) -> ToolResult: ...


class Gates:
    """Several gates as one (approvals, questions): a call is held by the first that holds
    it, and reads that gate's placeholder."""

    __slots__ = ("gates",)

    def __init__(self, *gates: CallGate) -> None:
        self.gates = gates

    def holds(self, call: ToolCall) -> bool:
        return any(gate.holds(call) for gate in self.gates)

    def placeholder(self, call: ToolCall) -> ToolResult:
        gate = next(gate for gate in self.gates if gate.holds(call))
        return gate.placeholder(call)


class RunTools(ToolManager):
    """A run's tools: ``on_start`` hears of calls before they run; ``gate`` holds some back."""

    __slots__ = ("gate", "on_start")

    def __init__(self) -> None:
        super().__init__()
        self.gate: CallGate | None = None
        self.on_start: StartListener | None = None

    @overload
    async def execute(self, calls: ToolCallInput) -> ToolResult: ...
    @overload
    async def execute(self, calls: Sequence[ToolCallInput]) -> list[ToolResult]: ...
    async def execute(
        self, calls: ToolCallInput | Sequence[ToolCallInput]
    ) -> ToolResult | list[ToolResult]:
        if isinstance(calls, ToolCall):
            self._started([calls])
            return await super().execute(calls)
        # The kit's loop hands over lists of its own ``ToolCall``s; anything else runs as is.
        if not isinstance(calls, list):
            return await super().execute(calls)
        gate = self.gate
        held = {id(call) for call in calls if gate is not None and _held(gate, call)}
        runnable = [call for call in calls if id(call) not in held]
        self._started([call for call in runnable if isinstance(call, ToolCall)])
        if not held:
            return await super().execute(calls)
        assert gate is not None
        ran = iter(await super().execute(runnable) if runnable else ())
        return [
            gate.placeholder(call) if id(call) in held and isinstance(call, ToolCall) else next(ran)
            for call in calls
        ]

    def _started(self, calls: list[ToolCall]) -> None:
        listener = self.on_start
        if listener is not None and calls:
            listener(calls)


def _held(gate: CallGate, call: Any) -> bool:
    return isinstance(call, ToolCall) and gate.holds(call)
