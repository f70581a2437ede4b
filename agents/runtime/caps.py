"""A profile's bounds as caps: a caller may lower them for one run, never raise them.

An operator sets an agent profile's step limit, timeout and token budget in the admin. Every
door through which a caller brings bounds of its own goes through here:

- ``POST /api/jobs/`` (``limit``, ``timeout``, ``budget``): ``Caps.check`` refuses a request
  above a cap (``AboveCap``, a 400 naming the cap) before anything is stored;
- a job when its agent is built (``ProfileRegistry.resolve``): ``Caps.resolve``, so a job
  stored before an operator tightened its profile still runs within the profile as it is now;
- a ``delegate`` call's child job (``child_request``): ``Caps.clamp``, the lower of what its
  parent has left and what the child's own profile allows (the parent's leftovers are bounds
  handed down, not a caller's request: nothing to refuse).

The profile's semantics are kept: its step limit and timeout always cap (a step limit of 0
allows no model turn), its token budget caps unless it is empty or 0 ("no limit"). A run
through ``/v1`` brings no step limit or timeout; its ``max_tokens`` is a completion cap that
``runtime.budgets.run_budget`` applies beside the profile's total budget (whichever runs out
first), so it can only lower it. Chat and REST runs bring no bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..models import AgentProfile

__all__ = ["MAX_BUDGET", "AboveCap", "Bound", "Bounds", "Caps", "Excess"]

# The largest token budget a request may name: the largest an operator can give a profile
# (its ``PositiveIntegerField`` holds 2**31 - 1 on every backend), so a profile without a
# budget refuses nothing an operator could have allowed, and the number stays a plain integer.
MAX_BUDGET = 2**31 - 1

type Bound = Literal["limit", "timeout", "budget"]

# What the admin calls each bound, for messages that name the cap.
CAP_NAMES: dict[Bound, str] = {
    "limit": "step limit",
    "timeout": "timeout (s)",
    "budget": "token budget",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """A run's step limit, timeout in seconds and token budget; ``None``: not set (the
    profile's applies; a ``budget`` of ``None`` after ``resolve``: no budget)."""

    limit: int | None = None
    timeout: float | None = None
    budget: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Excess:
    """One bound asked above its cap."""

    bound: Bound
    asked: float
    cap: float
    profile: str

    @property
    def message(self) -> str:
        return (
            f"Ensure this value is less than or equal to {_number(self.cap)}: "
            f"the {CAP_NAMES[self.bound]} of the agent profile {self.profile!r}."
        )


class AboveCap(ValueError):
    """A request asks more of a profile than its operator allows (a ``400`` at every door)."""

    status_code = 400
    default_code = "above_cap"

    def __init__(self, excesses: tuple[Excess, ...]) -> None:
        super().__init__(" ".join(f"{e.bound}: {e.message}" for e in excesses))
        self.excesses = excesses
        self.code = self.default_code


@dataclass(frozen=True, slots=True, kw_only=True)
class Caps:
    """The bounds of the agent profile ``profile`` (a slug), as caps (``budget`` ``None``:
    the profile has no token budget)."""

    profile: str
    limit: int
    timeout: float
    budget: int | None

    @classmethod
    def of(cls, profile: AgentProfile) -> Caps:
        return cls(
            profile=profile.slug,
            limit=profile.limit,
            timeout=profile.timeout,
            # An empty or 0 token budget is "no limit" (the admin's and the chat runtime's).
            budget=profile.token_budget or None,
        )

    def excesses(self, asked: Bounds) -> tuple[Excess, ...]:
        """The bounds of ``asked`` above their caps, in ``limit, timeout, budget`` order."""
        pairs: tuple[tuple[Bound, float | None, float | None], ...] = (
            ("limit", asked.limit, self.limit),
            ("timeout", asked.timeout, self.timeout),
            ("budget", asked.budget, self.budget),
        )
        return tuple(
            Excess(bound=bound, asked=value, cap=cap, profile=self.profile)
            for bound, value, cap in pairs
            if value is not None and cap is not None and value > cap
        )

    def check(self, asked: Bounds) -> Bounds:
        """``asked`` if it stays within the caps, else ``AboveCap`` naming each cap passed."""
        excesses = self.excesses(asked)
        if excesses:
            raise AboveCap(excesses)
        return asked

    def clamp(self, asked: Bounds) -> Bounds:
        """``asked`` lowered to the caps; what it leaves unset stays unset."""
        return Bounds(
            limit=None if asked.limit is None else _lower(asked.limit, self.limit),
            timeout=None if asked.timeout is None else _lower(asked.timeout, self.timeout),
            budget=_lower(asked.budget, self.budget) if asked.budget else None,
        )

    def resolve(self, asked: Bounds) -> Bounds:
        """What a run is built with: ``asked`` lowered to the caps, the caps where it is unset
        (a ``budget`` of 0 is unset, as on the profile)."""
        return Bounds(
            limit=_lower(asked.limit, self.limit),
            timeout=_lower(asked.timeout, self.timeout),
            budget=_lower(asked.budget or None, self.budget),
        )


def _lower[N: (int, float)](asked: N | None, cap: N | None) -> N | None:
    if asked is None:
        return cap
    if cap is None:
        return asked
    return min(asked, cap)


def _number(value: float) -> str:
    # ``300.0`` reads as the admin shows it, ``300``; ``42.5`` stays.
    return str(int(value)) if float(value).is_integer() else str(value)
