"""A run's token budget: the profile's, capped further by a request's ``max_tokens``."""

from __future__ import annotations

from orkestrel.core import Budget, TokenUsage, create_budget, create_token_budget

__all__ = ["run_budget"]


def run_budget(total: int | None, max_tokens: int | None) -> Budget[TokenUsage] | None:
    """The budget of a run: ``total`` tokens (the profile's) and ``max_tokens`` completion
    tokens (the request's), whichever runs out first; ``None`` when neither is set."""
    if not max_tokens:
        return create_token_budget(total) if total else None
    if not total:
        return create_token_budget(max_tokens, "completion")
    used = {"total": 0, "completion": 0, "level": 0.0}
    cap = max_tokens

    def consume(usage: TokenUsage) -> float:
        # The budget charges increments: charge how much nearer the nearer limit came, so
        # the budget (max 1) trips exactly when either share reaches 1.
        used["total"] += usage.total
        used["completion"] += usage.completion
        level = max(used["total"] / total, used["completion"] / cap)
        step = level - used["level"]
        used["level"] = level
        return step

    return create_budget(1.0, consume)
