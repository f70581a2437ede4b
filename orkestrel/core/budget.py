"""A consume-to-a-ceiling meter whose signal fires when the ceiling is reached."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, assert_never

from .abort import AbortSignal
from .usage import TokenUsage

__all__ = [
    "BUDGET_EXHAUSTED",
    "Budget",
    "TokenBudget",
    "TokenScope",
    "create_budget",
    "create_token_budget",
]

T = TypeVar("T")
TokenScope = Literal["total", "prompt", "completion"]
BUDGET_EXHAUSTED = "budget exhausted"


class Budget[T]:
    """Meters what ``consume`` measures; ``exhausted`` and the signal trip at ``max``."""

    __slots__ = ("_consume", "_signal", "consumed", "max")

    def __init__(self, max: float, consume: Callable[[T], float]) -> None:
        if isinstance(max, bool) or not isinstance(max, int | float) or math.isnan(max) or max < 0:
            raise ValueError(f"budget max must be a non-negative number, not {max!r}")
        if not callable(consume):
            raise TypeError("budget consume must be callable")
        self.max = max
        self._consume = consume
        self.consumed: float = 0
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        return self._signal

    @property
    def exhausted(self) -> bool:
        return self.consumed >= self.max

    def start(self) -> Budget[T]:
        """Begin a fresh metering window: nothing consumed, an unfired signal."""
        self.clear()
        return self

    def clear(self) -> None:
        """Reset to nothing consumed (a fired signal is replaced by a fresh one)."""
        self.consumed = 0
        if self._signal.aborted:
            self._signal = AbortSignal()

    def consume(self, value: T) -> float:
        """Charge what ``consume(value)`` measures; fire the signal on reaching ``max``."""
        return self._charge(self._consume(value))

    def _charge(self, amount: float) -> float:
        if amount and amount > 0:
            self.consumed += amount
        if self.consumed >= self.max and not self._signal.aborted:
            self._signal._fire(BUDGET_EXHAUSTED)
        return self.consumed


def create_budget[T](max: float, consume: Callable[[T], float]) -> Budget[T]:
    """Create a ``Budget`` measuring with ``consume`` up to ``max``."""
    return Budget(max, consume)


def _scoped(usage: TokenUsage, scope: TokenScope) -> int:
    if scope == "total":
        return usage.total
    if scope == "prompt":
        return usage.prompt
    if scope == "completion":
        return usage.completion
    assert_never(scope)


def _usage_field(usage: TokenUsage | Mapping[str, Any], scope: TokenScope) -> float:
    if type(usage) is TokenUsage:
        return _scoped(usage, scope)
    # A subclass or a mapping may carry anything in the field: only a real number counts.
    value: object = _scoped(usage, scope) if isinstance(usage, TokenUsage) else usage.get(scope, 0)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


class TokenBudget(Budget[TokenUsage]):
    """A ``Budget`` over ``TokenUsage`` charging one field (``scope``)."""

    __slots__ = ("scope",)

    def __init__(self, max: float, scope: TokenScope = "total") -> None:
        if scope not in ("total", "prompt", "completion"):
            raise ValueError(
                f"token budget scope must be total, prompt or completion, not {scope!r}"
            )
        super().__init__(max, lambda usage: _usage_field(usage, scope))
        self.scope = scope

    def consume(self, value: TokenUsage | Mapping[str, Any]) -> float:
        # Metered on every streamed delta, so the common case skips the generic path.
        if type(value) is TokenUsage:
            amount = _scoped(value, self.scope)
            if amount > 0:
                self.consumed += amount
            if self.consumed >= self.max and not self._signal.aborted:
                self._signal._fire(BUDGET_EXHAUSTED)
            return self.consumed
        return self._charge(_usage_field(value, self.scope))


def create_token_budget(max: float, scope: TokenScope = "total") -> TokenBudget:
    """A ``Budget`` over ``TokenUsage``, charging its ``scope`` field (total/prompt/completion)."""
    return TokenBudget(max, scope)
