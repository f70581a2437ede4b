"""What an endpoint's models cost: prices per million tokens, checked, and usage priced."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError

from orkestrel.core import TokenUsage

__all__ = ["PRICE_KEYS", "Prices", "usage_cost", "validate_prices"]

# USD per million tokens: input (uncached), output, and the cache's reads and writes.
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
MILLION = Decimal(1_000_000)
# Costs are kept to this many places (a hundred-millionth of a cent).
COST_PLACES = Decimal("1e-10")

Prices = Mapping[str, float | int]


def validate_prices(value: Any) -> None:
    """A JSON object of model name to ``{input, output, cache_read, cache_write}`` prices,
    each a non-negative number (USD per million tokens); a key may be left out."""
    # Not the code ``invalid``: a field swaps its own message in for a validator's of its codes.
    if value is None:
        return
    if not isinstance(value, dict):
        raise ValidationError(
            'Enter a JSON object of model name to prices, e.g. {"gpt-4o-mini": '
            '{"input": 0.15, "output": 0.6, "cache_read": 0.075}}.',
            code="prices",
        )
    for model, prices in value.items():
        if not isinstance(prices, dict):
            raise ValidationError(
                "The prices of %(model)r must be a JSON object.",
                code="prices",
                params={"model": model},
            )
        unknown = sorted(set(prices) - set(PRICE_KEYS))
        if unknown:
            raise ValidationError(
                "Unknown price %(keys)s for %(model)r: use input, output, cache_read, cache_write.",
                code="prices",
                params={"keys": ", ".join(unknown), "model": model},
            )
        for key, price in prices.items():
            if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
                raise ValidationError(
                    "%(model)r %(key)s must be a non-negative number (USD per million "
                    "tokens), not %(price)r.",
                    code="prices",
                    params={"model": model, "key": key, "price": price},
                )


def usage_cost(usage: TokenUsage | None, prices: Prices | None) -> Decimal | None:
    """What ``usage`` cost in USD at ``prices``; ``None`` without prices (unknown, not free).

    Cached input is priced apart: cache reads at ``cache_read``, cache writes at
    ``cache_write`` (each ``input`` when unset), the rest of the prompt at ``input``.
    """
    if usage is None or not prices:
        return None

    def price(key: str, fallback: str | None = None) -> Decimal:
        value = prices.get(key)
        if value is None and fallback is not None:
            value = prices.get(fallback)
        return Decimal(str(value)) if value is not None else Decimal(0)

    uncached = max(0, usage.prompt - usage.cache_read - usage.cache_write)
    total = (
        uncached * price("input")
        + usage.cache_read * price("cache_read", "input")
        + usage.cache_write * price("cache_write", "input")
        + usage.completion * price("output")
    )
    return (total / MILLION).quantize(COST_PLACES)
