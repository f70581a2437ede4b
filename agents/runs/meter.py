"""What a run's usage and finish frames read of its session: prices and the context meter."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from orkestrel.core import TokenUsage, estimate_messages
from orkestrel.protocol import ContextPayload, context_payload

from ..runtime.session import ChatSession
from ..runtime.usage import UsageRecorder

__all__ = ["SessionMeter"]


@dataclass(frozen=True, slots=True)
class SessionMeter:
    """The prices of the session's model and its context window (``chunk_frames.Meter``)."""

    session: ChatSession

    def cost(self, usage: TokenUsage) -> Decimal | None:
        """What ``usage`` cost (``None``: the model has no price)."""
        return UsageRecorder.for_spec(self.session.spec).cost(usage)

    def cost_after(self, spent: TokenUsage) -> Decimal | None:
        """The conversation's cost once this run's ``spent`` joins what it cost before."""
        spec = self.session.spec
        return UsageRecorder.for_spec(spec).cost_after(spec.cost, spent)

    def context(self, total: TokenUsage) -> ContextPayload:
        """The meter: the provider's count of the latest call's prompt, else the estimate.

        ``total`` has each call's usage folded in before the meter is read, and keeps that
        call's prompt (``latest_prompt``; ``None`` until the run's first report). The same
        count is stored with the conversation's usage, so a reload reads the same.
        """
        window = self.session.spec.profile.context_window
        reported = total.latest_prompt
        if reported:
            return context_payload(window, reported)
        agent = self.session.agent
        estimate = estimate_messages(agent.context.build(agent.provider.format))
        return context_payload(window, estimate=estimate)
