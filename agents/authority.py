"""Turn an ``AuthorityPolicy`` row and its ordered rules into the kit's ``Authority`` gate.

The rules are read once, when the policy is compiled: evaluating a call runs no query, so the
gate is safe to consult from the agent's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from orkestrel.core import (
    Authority,
    AuthorityContext,
    AuthorityDecision,
    ToolCall,
    to_tool_call,
)
from orkestrel.core import AuthorityRule as CoreRule

from .models import AuthorityPolicy, AuthorityRule

__all__ = [
    "NO_APPROVER",
    "ApprovalHolder",
    "DecisionHook",
    "PolicyAuthority",
    "compile_policy",
    "evaluate_policy",
]

logger = logging.getLogger(__name__)

DecisionHook = Callable[[ToolCall, AuthorityDecision, AuthorityRule | None], None]
"""Called with each evaluated call, its decision, and the deciding rule (``None``: fallback)."""


NO_APPROVER = "this call needs a person's approval, and this run cannot wait for one"
"""The denial of an ``ask`` where no person can answer (a job, a run without a gate)."""


class ApprovalHolder(Protocol):
    """Where an ``ask`` verdict's call goes to wait for a person (the run's approval gate)."""

    def hold(self, call: ToolCall, rule: AuthorityRule) -> None: ...


class PolicyAuthority(Authority):
    """The kit's gate over one policy's rules, reporting every decision to ``on_decision``.

    A rule whose verdict is ``ask`` lets its call through to ``holder``, which keeps it from
    running until a person decides; with no holder, it denies (``NO_APPROVER``).
    """

    __slots__ = ("_holder", "_on_decision", "policy", "rows")

    def __init__(
        self,
        policy: AuthorityPolicy,
        rows: Sequence[AuthorityRule],
        on_decision: DecisionHook | None = None,
        holder: ApprovalHolder | None = None,
    ) -> None:
        super().__init__(
            [_core_rule(row) for row in rows],
            AuthorityDecision(
                policy.fallback_zone, policy.fallback_allowed, policy.fallback_reason or None
            ),
        )
        self.policy = policy
        self.rows: tuple[AuthorityRule, ...] = tuple(rows)
        self._on_decision = on_decision
        self._holder = holder

    def rule_for(self, decision: AuthorityDecision) -> AuthorityRule | None:
        """The rule row that made ``decision`` (``None`` when the fallback decided)."""
        return None if decision.rule is None else self.rows[decision.rule]

    def evaluate(
        self, context: AuthorityContext | ToolCall | Mapping[str, Any]
    ) -> AuthorityDecision:
        decision = super().evaluate(context)
        rule = self.rule_for(decision)
        if rule is not None and rule.asks and decision.allowed:
            if self._holder is not None:
                # Recorded once a person decides (``ToolApproval``), not now.
                self._holder.hold(_as_call(context), rule)
                return decision
            decision = AuthorityDecision(decision.zone, False, NO_APPROVER, decision.rule)
        if self._on_decision is not None:
            try:
                self._on_decision(_as_call(context), decision, rule)
            except Exception:
                # A broken recorder must not change the verdict or crash the run.
                logger.exception("authority decision hook failed for policy %r", self.policy.name)
        return decision


def _as_call(value: AuthorityContext | ToolCall | Mapping[str, Any]) -> ToolCall:
    # The kit accepted ``value`` already; this mirrors how it read the call out of it.
    if isinstance(value, AuthorityContext):
        return value.call
    if isinstance(value, Mapping) and "call" in value:
        return to_tool_call(value["call"])
    return to_tool_call(value)


def _core_rule(row: AuthorityRule) -> CoreRule:
    matcher = row.matcher()
    return CoreRule(
        match=lambda context: matcher(context.call.name, context.call.arguments),
        zone=row.zone,
        allowed=row.allowed,
        reason=row.reason or None,
    )


class _Hypothetical:
    """A holder for calls that are only tried (the admin's evaluator): nothing waits."""

    def hold(self, call: ToolCall, rule: AuthorityRule) -> None:
        return None


def compile_policy(
    policy: AuthorityPolicy,
    *,
    on_decision: DecisionHook | None = None,
    holder: ApprovalHolder | None = None,
) -> PolicyAuthority:
    """The kit ``Authority`` for ``policy``: its rules by position, then its fallback.

    ``on_decision(call, decision, rule)`` runs after every evaluation, allowed or denied, with
    the deciding ``AuthorityRule`` row or ``None`` for the fallback. It runs inside the agent's
    event loop, so it must not touch the database synchronously.
    """
    # ``rules.all()`` honours a ``prefetch_related("rules")`` the caller already did.
    rows = sorted(policy.rules.all(), key=lambda row: row.position)
    return PolicyAuthority(policy, rows, on_decision, holder)


def evaluate_policy(
    policy: AuthorityPolicy, tool_name: str, arguments: Mapping[str, Any]
) -> tuple[AuthorityDecision, AuthorityRule | None]:
    """Decide one hypothetical call against ``policy``: the decision and its rule (or ``None``;
    a rule that asks lets the call through to a person)."""
    authority = compile_policy(policy, holder=_Hypothetical())
    decision = authority.evaluate(ToolCall("evaluate", tool_name, dict(arguments)))
    return decision, authority.rule_for(decision)
