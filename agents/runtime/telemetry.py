"""What a run's telemetry says about it, from the rows it was built from: its profile, the
model's endpoint kind as the GenAI provider, the prices its cost is counted at, and how its
authority rules are named (``orkestrel.telemetry.observer.RunLabels``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from orkestrel.core import AuthorityDecision, TokenUsage
from orkestrel.telemetry.observer import RuleInfo, RunLabels

from ..models import AgentProfile, AuthorityRule, ProviderEndpoint
from ..models.prices import usage_cost
from .spec import RuntimeSpec

__all__ = ["chat_labels", "job_labels"]


def chat_labels(spec: RuntimeSpec, run_id: int, response_model: Callable[[], str]) -> RunLabels:
    """A chat run's labels (``response_model``: the model the provider said answered)."""
    return RunLabels(
        kind="chat",
        profile=spec.profile.slug,
        provider=spec.endpoint.kind,
        model=spec.model_name,
        conversation_id=spec.conversation_id,
        run_id=run_id,
        price=_price(spec.endpoint, spec.model_name),
        rule_of=_rules(spec.rules),
        response_model=response_model,
    )


def job_labels(
    job_id: str,
    profile: AgentProfile,
    endpoint: ProviderEndpoint | None,
    rules: Sequence[AuthorityRule],
) -> RunLabels:
    """A job's labels: its id stands for the conversation a job has not."""
    model = profile.model_name
    return RunLabels(
        kind="job",
        profile=profile.slug,
        provider=endpoint.kind if endpoint is not None else "",
        model=model,
        conversation_id=job_id,
        job_id=job_id,
        price=_price(endpoint, model) if endpoint is not None else None,
        rule_of=_rules(rules),
    )


def _price(endpoint: ProviderEndpoint, model: str) -> Callable[[TokenUsage], float | None]:
    prices = endpoint.price_of(model)

    def price(usage: TokenUsage) -> float | None:
        cost = usage_cost(usage, prices)
        return None if cost is None else float(cost)

    return price


def _rules(rules: Sequence[AuthorityRule]) -> Callable[[AuthorityDecision], RuleInfo | None]:
    rows = tuple(rules)

    def rule_of(decision: AuthorityDecision) -> RuleInfo | None:
        index = decision.rule
        if index is None or not 0 <= index < len(rows):
            return None
        row = rows[index]
        return RuleInfo(f"#{row.position} {row.tool_glob} → {row.verdict}", row.asks)

    return rule_of
