"""Writing the usage ledger: one row per settled run, job or summary, priced as it is written.

Every settle path calls ``record`` with a ``Charge`` (who and what pays) inside its own
transaction: a run's in the hop that writes its final row, a job's with its settle, a
summary's with the conversation's counters. One ``INSERT`` each; nothing reads first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

from django.utils import timezone

from orkestrel.core import TokenUsage
from orkestrel.statements import insert

from ..models import UsageEntry
from .charge import KeyRef

__all__ = ["Charge", "Kind", "Outcome", "record"]

Kind = Literal["run", "job", "summary"]
Outcome = Literal["ok", "error"]


@dataclass(frozen=True, slots=True)
class Charge:
    """Who pays for a model's work (a user, through a key or not), and for which profile and
    ``<endpoint>/<model>``."""

    user_id: int
    key: KeyRef | None
    profile: str
    model: str


def record(
    charge: Charge,
    kind: Kind,
    usage: TokenUsage | None,
    cost: Decimal | None,
    *,
    source: str = "",
    outcome: Outcome = "ok",
    duration_ms: int | None = None,
    now: datetime | None = None,
) -> None:
    """Add one row to the ledger (in the caller's transaction, if any)."""
    spent = usage or TokenUsage()
    key = charge.key
    insert(
        UsageEntry(
            user_id=charge.user_id,
            key_id=key.id if key is not None else None,
            key_name=key.name[:100] if key is not None else "",
            kind=kind,
            outcome=outcome,
            profile=charge.profile[:100],
            model=charge.model[:300],
            source=source[:64],
            prompt=spent.prompt,
            completion=spent.completion,
            total=spent.total,
            cache_read=spent.cache_read,
            cache_write=spent.cache_write,
            reasoning=spent.reasoning,
            cost=cost,
            duration_ms=duration_ms,
            created=now or timezone.now(),
        )
    )
