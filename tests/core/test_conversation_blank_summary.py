"""A blank summary folds nothing (seed 004: compaction is a no-op, the context untouched, when
the model's turn returns no usable summary text): no recap ever stands in for lost history."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from orkestrel.core import create_agent, create_budget, create_conversation_manager
from orkestrel.core.conversation import create_conversation
from orkestrel.core.estimate import estimate_messages
from orkestrel.core.messages import Message
from orkestrel.providers import ScriptedProvider


class Answers:
    """A summarizer answering ``answers`` in turn (then ``"S"``), recording what it was fed."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[Message, ...]] = []

    async def __call__(self, messages: Sequence[Message]) -> str:
        self.calls.append(tuple(messages))
        return self.answers.pop(0) if self.answers else "S"


def history(conversation, count: int = 6) -> tuple[Message, ...]:
    return conversation.add(
        [
            {"role": "user" if index % 2 == 0 else "assistant", "content": f"turn {index}"}
            for index in range(count)
        ]
    )


@pytest.mark.parametrize("blank", ["", "   ", "\n\t \n"])
@pytest.mark.parametrize(
    ("answers", "calls"),
    [(("{blank}",), 1), (("S1", "{blank}"), 2)],
    ids=["section-summary", "rollup"],
)
async def test_a_blank_summary_folds_nothing_and_leaves_the_view_as_it_was(blank, answers, calls):
    summarize = Answers(*(answer.format(blank=blank) for answer in answers))
    conversation = create_conversation(summarize=summarize, keep=2)
    added = history(conversation)
    before = conversation.view()
    events: list[str] = []
    for name in ("compact", "summary", "collapse"):
        conversation.emitter.on(name, lambda *_, name=name: events.append(name))

    assert await conversation.compact() is None

    assert len(summarize.calls) == calls
    assert conversation.view() == before == added
    assert conversation.messages() == added
    assert conversation.sections == () and conversation.summary is None
    assert events == []
    assert conversation.snapshot()["messages"] == [m.to_dict() for m in added]


async def test_a_blank_recap_of_an_overflowing_cap_folds_nothing():
    summarize = Answers()
    conversation = create_conversation(summarize=summarize, keep=1, sections=1)
    history(conversation, 4)
    first = await conversation.compact()
    assert first is not None and len(conversation.sections) == 1
    history(conversation, 4)
    view = conversation.view()
    sections, summary = conversation.sections, conversation.summary
    # The new section and the rollup answer; the recap of the overflow is blank.
    summarize.answers = ["S2", "R2", "  "]

    assert await conversation.compact() is None
    assert conversation.view() == view
    assert conversation.sections == sections and conversation.summary == summary


async def test_an_automatic_fold_with_a_blank_summary_sends_the_whole_history():
    threads = create_conversation_manager(summarize=Answers("", ""), keep=1)
    provider = ScriptedProvider(script=[{"content": "ok"}])
    agent = create_agent(
        provider, conversations=threads, window=create_budget(40, estimate_messages)
    )
    for index in range(8):
        agent.context.messages.add(
            {"role": "user" if index % 2 == 0 else "assistant", "content": f"message {index} " * 4}
        )

    assert (await agent.generate()).content == "ok"

    sent = provider.calls[0].messages
    assert not any(m.content.startswith("[Summary of earlier messages]") for m in sent)
    assert [m.content for m in sent if m.role != "system"][:8] == [
        f"message {index} " * 4 for index in range(8)
    ]
    assert agent.context.messages.sections == ()
