"""Token usage as providers report it, and its sanitizer.

``prompt`` counts every input token, cached ones included; ``completion`` every output token,
reasoning included: ``cache_read`` and ``cache_write`` are subsets of ``prompt``, ``reasoning``
of ``completion`` (seed 004's canonical counters). ``latest_prompt`` is a snapshot, not a
counter: the prompt tokens of the latest request a sum covers (the context as the provider
counted it), ``None`` where unknown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["TokenUsage", "sanitize_usage", "to_usage"]

# The additive counters, in the order ``to_dict`` lists them.
COUNTERS = ("prompt", "completion", "total", "cache_read", "cache_write", "reasoning")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a call consumed: ``prompt`` in, ``completion`` out, ``total`` both; the cache
    and reasoning subsets; the latest request's prompt (``latest_prompt``)."""

    prompt: int = 0
    completion: int = 0
    total: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    # Left out of equality: two sums of the same counters are the same usage.
    latest_prompt: int | None = field(default=None, compare=False)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        latest = other.latest_prompt
        return TokenUsage(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.total + other.total,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.reasoning + other.reasoning,
            other.prompt if latest is None else latest,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "total": self.total,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "reasoning": self.reasoning,
        }


def _field(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value <= 0:
        return 0
    return math.floor(value)


def _clean(usage: TokenUsage) -> bool:
    return all(
        type(value) is int and value >= 0
        for value in (
            usage.prompt,
            usage.completion,
            usage.total,
            usage.cache_read,
            usage.cache_write,
            usage.reasoning,
        )
    )


def sanitize_usage(usage: TokenUsage | Mapping[str, Any]) -> TokenUsage:
    """Floor every counter to a non-negative integer; non-finite or negative becomes 0. Total.

    One call's usage comes back with ``latest_prompt`` set (its own prompt when unset).
    """
    # Read as ``object``: a subclass or a mapping may carry anything in these fields.
    values: tuple[object, ...]
    latest: object
    if type(usage) is TokenUsage and _clean(usage):
        if usage.latest_prompt is None:
            return replace(usage, latest_prompt=usage.prompt)
        if type(usage.latest_prompt) is int and usage.latest_prompt >= 0:
            return usage
    if isinstance(usage, TokenUsage):
        values = tuple(getattr(usage, name) for name in COUNTERS)
        latest = usage.latest_prompt
    elif isinstance(usage, Mapping):
        values = tuple(usage.get(name) for name in COUNTERS)
        latest = usage.get("latest_prompt")
    else:
        return TokenUsage(latest_prompt=0)
    clean = dict(zip(COUNTERS, map(_field, values), strict=True))
    return TokenUsage(**clean, latest_prompt=clean["prompt"] if latest is None else _field(latest))


def to_usage(value: TokenUsage | Mapping[str, Any]) -> TokenUsage:
    """Accept a ``TokenUsage`` or a mapping of its counters (ints; ``prompt``, ``completion``,
    ``total``, ``cache_read``, ``cache_write``, ``reasoning``)."""
    if isinstance(value, TokenUsage):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"usage must be a TokenUsage or a mapping, not {type(value).__name__}")
    fields = {}
    for name in COUNTERS:
        item = value.get(name, 0)
        if isinstance(item, bool) or not isinstance(item, int):
            raise TypeError(f"usage.{name} must be an int")
        fields[name] = item
    return TokenUsage(**fields)
