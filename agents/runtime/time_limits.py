"""A tool call's time limit: the model's ``timeout`` argument within the tool's maximum, and
the cleanup window a timed-out call gets before it is killed.

A tool whose parameters schema declares a ``timeout`` property lets the model ask for a limit
(seconds) per call: the call gets the smaller of that and the tool's configured maximum (a
row's ``timeout``); an absent, null or non-positive value leaves the maximum. On its limit a
call gets ``cleanup_seconds`` to clean up (a command: ``SIGTERM``, then ``SIGKILL`` after the
window; any other tool: cancelled, then left behind after the window), at most
``MAX_CLEANUP_SECONDS``, set by ``ORKESTREL["TOOL_CLEANUP_SECONDS"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .processes import GRACE_SECONDS

__all__ = [
    "CLEANUP_SETTING",
    "MAX_CLEANUP_SECONDS",
    "TIMEOUT_ARGUMENT",
    "asked_limit",
    "cleanup_seconds",
    "declares_timeout",
]

TIMEOUT_ARGUMENT = "timeout"
# The longest cleanup window: a timed-out call holds its run at most this much longer.
MAX_CLEANUP_SECONDS = 60.0
CLEANUP_SETTING = "TOOL_CLEANUP_SECONDS"


def declares_timeout(parameters: Mapping[str, Any] | None) -> bool:
    """Whether a parameters schema declares the ``timeout`` argument."""
    if not isinstance(parameters, Mapping):
        return False
    properties = parameters.get("properties")
    return isinstance(properties, Mapping) and TIMEOUT_ARGUMENT in properties


def asked_limit(arguments: Mapping[str, Any], maximum: float) -> float:
    """The call's limit: the model's ``timeout`` (seconds) when positive, never over
    ``maximum``."""
    asked = arguments.get(TIMEOUT_ARGUMENT)
    if isinstance(asked, bool) or not isinstance(asked, int | float) or not asked > 0:
        return maximum
    return min(float(asked), maximum)


def cleanup_seconds(config: Mapping[str, Any]) -> float:
    """The cleanup window ``config`` (``settings.ORKESTREL``) sets, within 0 and 60 seconds."""
    value = config.get(CLEANUP_SETTING, GRACE_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return GRACE_SECONDS
    return min(max(float(value), 0.0), MAX_CLEANUP_SECONDS)
