"""The observer seam: what a run tells whoever watches it (traces, metrics), in order.

A ``RunObserver`` set on an agent (``Agent.observer``) hears each run's steps from inside the
run's own task, so an observer may make something current for what follows (a span, in the
app's telemetry) and undo it at the matching end:

- ``run_started`` … ``run_ended`` around the whole run;
- per model request: ``request_started``, ``first_chunk`` (the first thing the model sent),
  ``request_ended`` (its result with the usage, or the error that cut it);
- per tool call: ``tool_started`` with the authority's decision, ``tool_ended`` with its
  result. A call the gates answered without running (denied, scoped out) is started and ended
  at once. A call that runs does so in a task of its own, so the pair is in that task.

With no observer the run calls nothing: the seam costs one ``None`` check per step. An
observer must not raise; what it raises is the run's error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .authority import AuthorityDecision
    from .chunks import AgentResult
    from .messages import ToolCall, ToolResult
    from .provider import ProviderResult

__all__ = ["RunObserver"]


class RunObserver(Protocol):
    """Hears one agent's runs: their start and end, model requests and tool calls."""

    def run_started(self) -> None: ...

    def run_ended(self, result: AgentResult | None, error: BaseException | None) -> None: ...

    def request_started(self, turn: int) -> None: ...

    def first_chunk(self) -> None: ...

    def request_ended(self, result: ProviderResult | None, error: BaseException | None) -> None:
        """``result`` carries the request's usage (sanitized) and stop reason."""
        ...

    def tool_started(self, call: ToolCall, decision: AuthorityDecision | None) -> None:
        """``decision``: the authority's verdict (``None``: no authority consulted)."""
        ...

    def tool_ended(self, call: ToolCall, result: ToolResult) -> None: ...
