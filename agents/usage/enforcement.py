"""A start against the quotas: refused while a blocking one is used up, warned past a warning one.

``judge`` is pure (the standings and the clock are the caller's); ``enforce`` reads the
standings for a start and answers for the HTTP doors too: a refusal's ``Retry-After``, a
warning's ``X-Quota-Warning`` header (a websocket's run gets the warning as a notice frame).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from orkestrel.refusals import Refusal
from orkestrel.request_scope import add_headers

from .charge import KeyRef
from .quotas import Standing, any_apply, standings

__all__ = ["WARNING_CODE", "WARNING_HEADER", "QuotaExceeded", "QuotaWarning", "enforce", "judge"]

WARNING_CODE = "quota_warning"
WARNING_HEADER = "X-Quota-Warning"


def _upper_first(text: str) -> str:
    # Not ``capitalize()``: a key's or group's name keeps its case.
    return text[:1].upper() + text[1:]


class QuotaExceeded(Refusal):
    """A blocking quota of the user, a group of theirs or their key is used up until it resets."""

    code = "quota_exceeded"
    status_code = 429

    def __init__(self, standing: Standing, now: datetime) -> None:
        resets = standing.resets_at
        super().__init__(
            f"{_upper_first(standing.describe())} is used up; it resets at "
            f"{resets:%Y-%m-%d %H:%M} UTC."
        )
        self.standing = standing
        self.resets_at = resets
        # Whole seconds, at least one: what ``Retry-After`` says.
        self.retry_after = max(1, math.ceil((resets - now).total_seconds()))

    def extensions(self) -> dict[str, str]:
        """What the REST problem body adds: when the quota resets (ISO 8601, UTC)."""
        return {"resets_at": self.resets_at.strftime("%Y-%m-%dT%H:%M:%SZ")}


@dataclass(frozen=True, slots=True)
class QuotaWarning:
    """A warning quota is used up: the start goes on, and is told so."""

    standing: Standing

    @property
    def message(self) -> str:
        resets = self.standing.resets_at
        return (
            f"{_upper_first(self.standing.describe())} is used up (it resets at "
            f"{resets:%Y-%m-%d %H:%M} UTC); this run goes on."
        )


def judge(found: list[Standing], now: datetime) -> list[QuotaWarning]:
    """The warnings of a start given ``found`` standings; ``QuotaExceeded`` while a blocking
    quota is used up (the one lifting last: the start waits for all of them)."""
    blocked = [s for s in found if s.reached and s.action == "block"]
    if blocked:
        raise QuotaExceeded(max(blocked, key=lambda s: s.resets_at), now)
    return [QuotaWarning(s) for s in found if s.reached and s.action == "warn"]


def enforce(user_id: int, key: KeyRef | None, now: datetime | None = None) -> list[QuotaWarning]:
    """``judge`` a start of ``user_id`` through ``key`` (one fixed statement when no quota
    applies, the standings' query when one does); the HTTP answer gets its
    ``Retry-After`` (refused) or ``X-Quota-Warning`` (warned) header."""
    key_id = key.id if key is not None else None
    if not any_apply(user_id, key_id):
        return []
    moment = now or timezone.now()
    try:
        warnings = judge(standings(user_id, key_id, moment), moment)
    except QuotaExceeded as refusal:
        add_headers({"Retry-After": str(refusal.retry_after)})
        raise
    if warnings:
        add_headers({WARNING_HEADER: warnings[0].message})
    return warnings
