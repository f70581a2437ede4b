"""The conversation summarizer, built from the profile's own provider (the seed's pattern)."""

from __future__ import annotations

from collections.abc import Sequence

from orkestrel.core import (
    AbortSignal,
    ConversationSummarizer,
    Message,
    Provider,
    mint_id,
    sanitize_usage,
)
from orkestrel.db import in_thread
from orkestrel.refusals import Refusal

from .usage import UsageRecorder

__all__ = ["SUMMARY_INSTRUCTION", "SUMMARY_TIMEOUT", "CompactionFailed", "make_summarizer"]

SUMMARY_TIMEOUT = 120.0
SUMMARY_INSTRUCTION = (
    "Summarize the conversation so far concisely. Keep names, numbers, decisions, open "
    "questions and anything the user asked to remember."
)


class CompactionFailed(RuntimeError, Refusal):
    """The model gave no summary (a blank answer) or could not be asked: nothing was folded.

    Raised by the summarizer, so the kit's fold stays atomic; an automatic fold reports it as
    the ``compaction_failed`` notice, a manual one refuses with that code.
    """

    code = "compaction_failed"
    status_code = 409


def make_summarizer(
    provider: Provider, focus: str | None = None, usage: UsageRecorder | None = None
) -> ConversationSummarizer:
    """A summarizer calling ``provider``; ``focus`` says what the summary must keep (seed 004).

    With ``usage`` each summary's reported usage is added to the conversation's (and so its
    cost) and to the usage ledger: compaction spends tokens like any answer. A blank summary
    raises ``CompactionFailed``: an empty recap must never stand in for the history it folds.
    """
    instruction = SUMMARY_INSTRUCTION
    if focus:
        instruction += f" Focus on: {focus}"

    async def summarize(messages: Sequence[Message]) -> str:
        # The instruction goes last as a user turn: a chat model answers nothing when the
        # prompt ends on an assistant turn.
        prompt = [*messages, Message(mint_id(), "user", instruction)]
        result = await provider.generate(prompt, AbortSignal.timeout(SUMMARY_TIMEOUT))
        if usage is not None and result.usage is not None and result.usage.total:
            # Counters and cost only: a summary's prompt is not the conversation's context.
            await in_thread(usage.add_summary)(sanitize_usage(result.usage))
        summary = result.content.strip()
        if not summary:
            raise CompactionFailed("The model gave no summary: nothing was folded.")
        return summary

    return summarize
