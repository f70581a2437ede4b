"""Token usage as providers report it, and its sanitizer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenUsage", "sanitize_usage", "to_usage"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a call consumed: ``prompt`` in, ``completion`` out, ``total`` both."""

    prompt: int = 0
    completion: int = 0
    total: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.total + other.total,
        )

    def to_dict(self) -> dict[str, int]:
        return {"prompt": self.prompt, "completion": self.completion, "total": self.total}


def _field(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value <= 0:
        return 0
    return math.floor(value)


def sanitize_usage(usage: TokenUsage | Mapping[str, Any]) -> TokenUsage:
    """Floor every field to a non-negative integer; non-finite or negative becomes 0. Total."""
    # Read as ``object``: a subclass or a mapping may carry anything in these fields.
    prompt: object
    completion: object
    total: object
    if type(usage) is TokenUsage:
        prompt, completion, total = usage.prompt, usage.completion, usage.total
        if (
            type(prompt) is int
            and type(completion) is int
            and type(total) is int
            and prompt >= 0
            and completion >= 0
            and total >= 0
        ):
            return usage
    elif isinstance(usage, TokenUsage):
        prompt, completion, total = usage.prompt, usage.completion, usage.total
    elif isinstance(usage, Mapping):
        prompt, completion, total = (
            usage.get("prompt"),
            usage.get("completion"),
            usage.get("total"),
        )
    else:
        return TokenUsage()
    return TokenUsage(_field(prompt), _field(completion), _field(total))


def to_usage(value: TokenUsage | Mapping[str, Any]) -> TokenUsage:
    """Accept a ``TokenUsage`` or a mapping with ``prompt`` / ``completion`` / ``total`` ints."""
    if isinstance(value, TokenUsage):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"usage must be a TokenUsage or a mapping, not {type(value).__name__}")
    fields = {}
    for name in ("prompt", "completion", "total"):
        item = value.get(name, 0)
        if isinstance(item, bool) or not isinstance(item, int):
            raise TypeError(f"usage.{name} must be an int")
        fields[name] = item
    return TokenUsage(**fields)
