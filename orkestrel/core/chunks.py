"""What an agent run streams (chunks) and settles to (``AgentResult``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .messages import ToolCall, ToolResult
from .usage import TokenUsage

__all__ = [
    "AgentChunk",
    "AgentResult",
    "AgentStatus",
    "StopReason",
    "ThinkChunk",
    "TokenChunk",
    "ToolChunk",
    "UsageChunk",
]

AgentStatus = Literal["idle", "running", "done", "error"]
# Why a run stopped: a natural answer, a cancel, or the tool-iteration limit.
StopReason = Literal["done", "abort", "exhaust"]


@dataclass(frozen=True, slots=True)
class TokenChunk:
    """A piece of the answer."""

    content: str
    type: Literal["token"] = "token"


@dataclass(frozen=True, slots=True)
class ThinkChunk:
    """A piece of live reasoning."""

    content: str
    type: Literal["think"] = "think"


@dataclass(frozen=True, slots=True)
class ToolChunk:
    """A dispatched tool call and its result (a denial is a result with an error).

    ``result.display`` (``None`` unless the tool returned one) is for the user's eyes: the
    model never reads it.
    """

    call: ToolCall
    result: ToolResult
    type: Literal["tool"] = "tool"


@dataclass(frozen=True, slots=True)
class UsageChunk:
    """One provider call's reported usage."""

    usage: TokenUsage
    type: Literal["usage"] = "usage"


AgentChunk = TokenChunk | ThinkChunk | ToolChunk | UsageChunk


@dataclass(frozen=True, slots=True)
class AgentResult:
    """A run's settled outcome; ``partial`` when cancelled or out of tool iterations."""

    content: str
    thinking: str | None = None
    usage: TokenUsage | None = None
    partial: bool = False
    stop: StopReason = "done"
    # Why the run was cancelled (the abort reason), when it was.
    reason: object = None

    def to_dict(self) -> Mapping[str, Any]:
        return {
            "content": self.content,
            "thinking": self.thinking,
            "usage": self.usage.to_dict() if self.usage else None,
            "partial": self.partial,
            "stop": self.stop,
        }
