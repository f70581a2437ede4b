"""A settled job's account: its usage priced at its model's prices, and its ledger row.

The job's ``result.usage.cost`` is written with the cost (a job ran at prices the API shows
next to its tokens), and the ledger row is written in the settle's transaction, only when the
settle took (a job another process took over settles there, and is counted there).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from django.db import transaction

from orkestrel.core import TokenUsage

from ..models.prices import usage_cost
from ..runtime.progress import ProgressPayload
from ..usage.ledger import Charge, record
from .records import JobSpec, Outcome, finish_job

__all__ = ["job_charge", "priced", "settle_job"]


def job_charge(spec: JobSpec) -> Charge:
    """Who pays for the job: its user (through its key), on its profile's model."""
    endpoint = spec.config.endpoint
    model = f"{endpoint.name}/{spec.profile.model_name}" if endpoint is not None else ""
    return Charge(spec.user_id, spec.key, spec.profile.slug, model)


def _usage(outcome: Outcome) -> TokenUsage | None:
    result = outcome.result
    usage = result.get("usage") if result is not None else None
    if not isinstance(usage, dict):
        return None
    fields = ("prompt", "completion", "total", "cache_read", "cache_write", "reasoning")
    return TokenUsage(**{name: int(usage.get(name) or 0) for name in fields})


def priced(spec: JobSpec, outcome: Outcome) -> tuple[Outcome, TokenUsage | None, Decimal | None]:
    """The outcome with its usage's cost filled in, its usage, and the cost (``None``: no
    usage, or the model has no price)."""
    usage = _usage(outcome)
    endpoint = spec.config.endpoint
    prices = endpoint.price_of(spec.profile.model_name) if endpoint is not None else None
    cost = usage_cost(usage, prices)
    if cost is None or outcome.result is None:
        return outcome, usage, cost
    result: dict[str, Any] = dict(outcome.result)
    result["usage"] = {**result["usage"], "cost": format(cost.normalize(), "f")}
    return replace(outcome, result=result), usage, cost


def settle_job(
    spec: JobSpec,
    owner: str,
    outcome: Outcome,
    progress: ProgressPayload | None,
    duration_ms: int,
) -> bool:
    """``finish_job`` with the job priced and its ledger row, in one transaction; whether
    ``owner`` still held it."""
    outcome, usage, cost = priced(spec, outcome)
    with transaction.atomic():
        finished = finish_job(spec.record.id, owner, outcome, progress)
        if finished:
            record(
                job_charge(spec),
                "job",
                usage,
                cost,
                source=spec.record.id,
                outcome="error" if outcome.status == "error" else "ok",
                duration_ms=duration_ms,
            )
    return finished
