"""Why a run cannot start: the refusals every front door maps to its own answer."""

from __future__ import annotations

__all__ = ["Busy", "StartFailed", "TooManyRuns"]


class Busy(RuntimeError):
    """A run is already streaming on this conversation (in this process or another)."""


class TooManyRuns(RuntimeError):
    """The user has as many runs going as ``ORKESTREL["MAX_RUNS_PER_USER"]`` allows."""


class StartFailed(RuntimeError):
    """The run could not be built (its profile's provider, tools or policy); it ended as an
    error, the user message stays stored."""
