"""Conversation: the live tail, compaction into sections, view, search, reference, snapshots."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core.constants import CONVERSATION_RECAP_PREFIX
from orkestrel.core.conversation import Conversation, Section, create_conversation
from orkestrel.core.errors import ConversationError
from orkestrel.core.messages import Message, ToolCall


async def join(messages: Sequence[Message]) -> str:
    """A data-stub summarizer: the folded contents, joined."""
    return " | ".join(message.content for message in messages)


class Recorder:
    """A summarizer that records what it was fed and can fail on a chosen call."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls: list[tuple[Message, ...]] = []
        self.fail_on = fail_on

    async def __call__(self, messages: Sequence[Message]) -> str:
        self.calls.append(tuple(messages))
        if self.fail_on == len(self.calls):
            raise RuntimeError("summarizer down")
        return f"S{len(self.calls)}"


def turns(conversation: Conversation, *contents: str) -> tuple[Message, ...]:
    return conversation.add(
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": c}
            for i, c in enumerate(contents)
        ]
    )


def events(conversation: Conversation) -> list[tuple[str, tuple[object, ...]]]:
    seen: list[tuple[str, tuple[object, ...]]] = []
    for name in ("compact", "summary", "rehydrate", "collapse"):
        conversation.emitter.on(name, lambda *args, name=name: seen.append((name, args)))
    return seen


# -- the live tail -------------------------------------------------------------------------------


def test_add_single_mints_an_id_and_carries_role_and_content() -> None:
    conversation = create_conversation()
    message = conversation.add({"role": "user", "content": "hi"})
    assert isinstance(message, Message)
    assert message.id and (message.role, message.content) == ("user", "hi")
    assert message.calls is None
    assert "calls" not in message.to_dict()


def test_add_carries_calls_only_when_given() -> None:
    conversation = create_conversation()
    call = {"id": "c1", "name": "lookup", "arguments": {"q": "x"}}
    message = conversation.add({"role": "assistant", "content": "", "calls": [call]})
    assert message.calls == (ToolCall("c1", "lookup", {"q": "x"}),)
    assert message.to_dict()["calls"] == [call]


def test_add_batch_returns_created_messages_in_order_with_unique_ids() -> None:
    conversation = create_conversation()
    created = turns(conversation, "a", "b", "c")
    assert isinstance(created, tuple)
    assert [m.content for m in created] == ["a", "b", "c"]
    assert len({m.id for m in created}) == 3
    assert conversation.messages() == created


def test_added_message_is_the_immutable_object_message_resolves() -> None:
    conversation = create_conversation()
    message = conversation.add({"role": "user", "content": "hi"})
    assert conversation.message(message.id) is message
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]


def test_add_keeps_a_given_id_but_never_overwrites_a_live_message() -> None:
    conversation = create_conversation()
    first = conversation.add({"id": "m1", "role": "user", "content": "first"})
    second = conversation.add({"id": "m1", "role": "user", "content": "second"})
    assert first.id == "m1" and second.id != "m1"
    assert [m.content for m in conversation.messages()] == ["first", "second"]


def test_add_batch_with_an_invalid_item_stores_nothing() -> None:
    conversation = create_conversation()
    with pytest.raises(ValueError, match="role"):
        conversation.add([{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}])
    assert conversation.count == 0


def test_add_rejects_a_non_message_with_type_error() -> None:
    with pytest.raises(TypeError, match="message"):
        create_conversation().add("hello")  # type: ignore[arg-type]


def test_message_lookup_misses_with_none() -> None:
    assert create_conversation().message("nope") is None


def test_messages_lists_the_live_tail_in_insertion_order() -> None:
    conversation = create_conversation()
    a = conversation.add({"role": "user", "content": "a"})
    b = conversation.add({"role": "assistant", "content": "b"})
    assert conversation.messages() == (a, b)


def test_remove_single_and_batch_report_whether_any_was_removed() -> None:
    conversation = create_conversation()
    a, b, c = turns(conversation, "a", "b", "c")
    assert conversation.remove(a.id) is True
    assert conversation.remove(a.id) is False
    assert conversation.remove([b.id, "missing"]) is True
    assert conversation.remove(["missing"]) is False
    assert conversation.messages() == (c,)
    assert conversation.count == 1


def test_clear_empties_the_tail_but_keeps_sections() -> None:
    async def run() -> None:
        conversation = create_conversation(summarize=join, keep=1)
        turns(conversation, "a", "b", "c")
        await conversation.compact()
        conversation.clear()
        assert conversation.count == 0 and conversation.messages() == ()
        assert len(conversation.sections) == 1

    asyncio.run(run())


# -- construction ------------------------------------------------------------------------------


def test_id_is_minted_when_omitted_and_kept_when_given() -> None:
    assert create_conversation().id != create_conversation().id
    assert create_conversation(id="thread").id == "thread"


def test_sections_cap_below_one_raises_sections_error_at_construction() -> None:
    with pytest.raises(ConversationError) as caught:
        create_conversation(sections=0)
    assert caught.value.code == "SECTIONS"


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        ({"keep": -1}, ValueError, "keep"),
        ({"keep": "2"}, TypeError, "keep"),
        ({"sections": 1.5}, TypeError, "sections"),
        ({"id": 3}, TypeError, "id"),
        ({"summarize": "nope"}, TypeError, "summarize"),
    ],
)
def test_bad_options_raise_naming_the_field(kwargs: dict, error: type, field: str) -> None:
    with pytest.raises(error, match=field):
        create_conversation(**kwargs)


def test_summarizable_is_true_exactly_when_a_summarizer_is_supplied() -> None:
    assert create_conversation(summarize=join).summarizable is True
    assert create_conversation().summarizable is False


def test_summary_is_none_and_sections_empty_before_any_compaction() -> None:
    conversation = create_conversation(summarize=join)
    assert conversation.summary is None and conversation.sections == ()


# -- compaction -------------------------------------------------------------------------------


async def test_compact_without_a_summarizer_raises_summarizer_error() -> None:
    conversation = create_conversation()
    turns(conversation, "a")
    with pytest.raises(ConversationError) as caught:
        await conversation.compact()
    assert caught.value.code == "SUMMARIZER"


async def test_compact_with_a_sub_one_sections_override_raises_sections_error() -> None:
    conversation = create_conversation(summarize=join)
    turns(conversation, "a")
    with pytest.raises(ConversationError) as caught:
        await conversation.compact(sections=0)
    assert caught.value.code == "SECTIONS"


async def test_compact_folds_the_oldest_count_minus_keep_into_a_section() -> None:
    summarize = Recorder()
    conversation = create_conversation(summarize=summarize, keep=2)
    a, b, c, d = turns(conversation, "a", "b", "c", "d")
    section = await conversation.compact()
    assert isinstance(section, Section)
    assert section.messages == (a, b) and section.summary == "S1"
    assert conversation.messages() == (c, d)
    assert conversation.sections == (section,)
    assert conversation.summary == "S2"
    assert summarize.calls[0] == (a, b)


async def test_rollup_is_a_second_call_over_the_unframed_section_summaries() -> None:
    summarize = Recorder()
    conversation = create_conversation(summarize=summarize)
    turns(conversation, "a")
    first = await conversation.compact()
    turns(conversation, "b")
    second = await conversation.compact()
    assert first is not None and second is not None
    assert len(summarize.calls) == 4
    rollup_input = summarize.calls[3]
    assert rollup_input == (
        Message(first.id, "assistant", "S1"),
        Message(second.id, "assistant", "S3"),
    )
    assert conversation.summary == "S4"


async def test_compact_returns_none_without_calls_or_events_when_count_le_keep() -> None:
    summarize = Recorder()
    conversation = create_conversation(summarize=summarize, keep=2)
    seen = events(conversation)
    turns(conversation, "a", "b")
    assert await conversation.compact() is None
    assert summarize.calls == [] and seen == []
    assert conversation.count == 2 and conversation.summary is None


async def test_keep_argument_beats_own_keep_which_beats_the_default() -> None:
    conversation = create_conversation(summarize=join, keep=3)
    turns(conversation, "a", "b", "c", "d", "e")
    await conversation.compact()
    assert conversation.count == 3
    await conversation.compact(keep=1)
    assert conversation.count == 1
    await create_conversation(summarize=join).compact()  # nothing to fold, no error
    default = create_conversation(summarize=join)
    turns(default, "a", "b")
    await default.compact()
    assert default.count == 0


async def test_compact_emits_summary_then_compact() -> None:
    conversation = create_conversation(summarize=Recorder())
    seen = events(conversation)
    turns(conversation, "a")
    section = await conversation.compact()
    assert seen == [("summary", ("S2",)), ("compact", (section,))]


async def test_a_raising_listener_is_routed_to_error_and_compaction_still_commits() -> None:
    errors: list[tuple[BaseException, str]] = []

    def broken(section: Section) -> None:
        raise RuntimeError("observer bug")

    conversation = create_conversation(
        summarize=join, on={"compact": broken}, error=lambda exc, event: errors.append((exc, event))
    )
    turns(conversation, "a")
    section = await conversation.compact()
    assert conversation.sections == (section,)
    assert [(str(exc), event) for exc, event in errors] == [("observer bug", "compact")]


@pytest.mark.parametrize("fail_on", [3, 4, 5])
async def test_a_raising_summarizer_leaves_the_conversation_unchanged(fail_on: int) -> None:
    # Calls 1-2 seed one section; the next fold makes call 3 (section), 4 (rollup), 5 (collapse).
    conversation = create_conversation(summarize=Recorder(fail_on=fail_on), sections=1)
    turns(conversation, "seed")
    first = await conversation.compact()
    tail = turns(conversation, "x", "y")
    before = (conversation.sections, conversation.summary, conversation.view())
    seen = events(conversation)
    with pytest.raises(RuntimeError, match="summarizer down"):
        await conversation.compact()
    assert (conversation.sections, conversation.summary, conversation.view()) == before
    assert conversation.messages() == tail and conversation.sections == (first,)
    assert seen == []


async def test_a_summarizer_returning_a_non_string_raises_and_changes_nothing() -> None:
    async def bad(messages: Sequence[Message]) -> str:
        return 42  # type: ignore[return-value]

    conversation = create_conversation(summarize=bad)
    turns(conversation, "a")
    with pytest.raises(TypeError, match="string"):
        await conversation.compact()
    assert conversation.count == 1 and conversation.sections == ()


async def test_overflowing_the_sections_cap_collapses_the_oldest_into_one_section() -> None:
    summarize = Recorder()
    conversation = create_conversation(summarize=summarize, sections=2)
    seen = events(conversation)
    originals = []
    for content in ("a", "b", "c"):
        originals.extend(turns(conversation, content))
        await conversation.compact()
    assert len(conversation.sections) == 2
    merged, newest = conversation.sections
    assert merged.messages == tuple(originals[:2]) and newest.messages == (originals[2],)
    # Calls: S1,S2 (first fold), S3,S4 (second), S5 section, S6 rollup, S7 collapse.
    assert merged.summary == "S7"
    assert [m.content for m in summarize.calls[6]] == ["S1", "S3"]
    assert conversation.summary == "S6"
    assert seen[-1] == ("collapse", (merged,))
    assert [name for name, _ in seen[-3:]] == ["summary", "compact", "collapse"]


async def test_a_per_compaction_sections_override_caps_that_fold() -> None:
    conversation = create_conversation(summarize=join)
    for content in ("a", "b", "c"):
        turns(conversation, content)
        await conversation.compact()
    assert len(conversation.sections) == 3
    turns(conversation, "d")
    await conversation.compact(sections=1)
    (only,) = conversation.sections
    assert [m.content for m in only.messages] == ["a", "b", "c", "d"]


async def test_concurrent_compactions_never_fold_a_message_twice() -> None:
    async def slow(messages: Sequence[Message]) -> str:
        await asyncio.sleep(0)
        return await join(messages)

    conversation = create_conversation(summarize=slow)
    turns(conversation, "a", "b")
    first, second = await asyncio.gather(conversation.compact(), conversation.compact())
    assert first is not None and second is None
    assert [m.content for s in conversation.sections for m in s.messages] == ["a", "b"]


# -- view, rehydrate, search, reference --------------------------------------------------------


async def test_view_is_one_recap_per_section_then_the_live_tail() -> None:
    conversation = create_conversation(summarize=join, keep=1)
    a, b, c = turns(conversation, "a", "b", "c")
    section = await conversation.compact()
    assert section is not None
    assert conversation.view() == (
        Message(section.id, "assistant", CONVERSATION_RECAP_PREFIX + "a | b"),
        c,
    )
    assert conversation.summary not in [m.content for m in conversation.view()]


async def test_view_is_cached_until_the_tail_or_sections_change() -> None:
    conversation = create_conversation(summarize=join)
    turns(conversation, "a")
    first = conversation.view()
    assert conversation.view() is first
    added = conversation.add({"role": "user", "content": "b"})
    assert conversation.view()[-1] is added
    await conversation.compact()
    assert len(conversation.view()) == 1 and conversation.view()[0].role == "assistant"


async def test_rehydrate_returns_the_originals_and_emits_rehydrate() -> None:
    conversation = create_conversation(summarize=join)
    seen = events(conversation)
    originals = turns(conversation, "a", "b")
    section = await conversation.compact()
    assert section is not None
    seen.clear()
    assert conversation.rehydrate(section.id) == originals
    assert seen == [("rehydrate", (section.id, originals))]
    assert conversation.count == 0  # a pure read: nothing is reinserted


def test_rehydrate_of_an_unknown_id_is_empty_and_silent() -> None:
    conversation = create_conversation()
    seen = events(conversation)
    assert conversation.rehydrate("nope") == ()
    assert seen == []


async def test_search_is_case_insensitive_over_sections_then_the_tail() -> None:
    conversation = create_conversation(summarize=join, keep=1)
    folded, _, live = turns(conversation, "My name is ADA", "hello", "ada again")
    await conversation.compact()
    assert conversation.search("ada") == (folded, live)
    assert conversation.search("zzz") == ()


async def test_reference_renders_the_exact_provenance_block() -> None:
    conversation = create_conversation(id="planning", summarize=join)
    turns(conversation, "We chose Postgres", "Agreed")
    await conversation.compact()
    picked = conversation.search("postgres")
    assert conversation.reference(label="Planning", messages=picked) == (
        '[Reference — conversation "Planning" — NOT part of this conversation]\n'
        "Summary: We chose Postgres | Agreed\n"
        "Relevant messages:\n"
        "- user: We chose Postgres"
    )


async def test_reference_defaults_to_the_id_and_omits_what_is_absent_or_declined() -> None:
    conversation = create_conversation(id="b", summarize=join)
    marker = '[Reference — conversation "b" — NOT part of this conversation]'
    assert conversation.reference() == marker  # no rollup yet
    turns(conversation, "x")
    await conversation.compact()
    assert conversation.reference(summary=False) == marker
    assert conversation.reference(summary=False, messages=[]) == marker
    assert conversation.reference() == marker + "\nSummary: x"
    assert conversation.reference(
        summary=False, messages=[{"role": "assistant", "content": "y"}]
    ) == (marker + "\nRelevant messages:\n- assistant: y")


# -- snapshots ---------------------------------------------------------------------------------


async def test_snapshot_is_plain_json_with_summary_omitted_until_set() -> None:
    conversation = create_conversation(id="t", summarize=join, keep=1)
    assert conversation.snapshot() == {"id": "t", "sections": [], "messages": []}
    a, b = turns(conversation, "a", "b")
    section = await conversation.compact()
    assert section is not None
    snapshot = conversation.snapshot()
    assert snapshot == {
        "id": "t",
        "summary": "a",
        "sections": [{"id": section.id, "summary": "a", "messages": [a.to_dict()]}],
        "messages": [b.to_dict()],
    }
    assert json.loads(json.dumps(snapshot)) == snapshot


async def test_hydrating_restores_state_silently_and_the_snapshot_id_wins() -> None:
    source = create_conversation(id="orig", summarize=join, keep=1)
    turns(source, "a", "b", "c")
    await source.compact()
    seen: list[str] = []
    restored = create_conversation(
        id="other",
        summarize=join,
        snapshot=json.loads(json.dumps(source.snapshot())),
        on={name: (lambda *_, n=name: seen.append(n)) for name in ("compact", "summary")},
    )
    assert restored.id == "orig"
    assert restored.summary == source.summary
    assert restored.sections == source.sections
    assert restored.messages() == source.messages()
    assert restored.view() == source.view()
    assert seen == []
    turns(restored, "d")
    assert await restored.compact() is not None  # it keeps compacting


def test_a_snapshot_mutated_after_hydration_does_not_leak_in() -> None:
    snapshot = {
        "id": "t",
        "sections": [],
        "messages": [
            {
                "id": "m",
                "role": "assistant",
                "content": "",
                "calls": [{"id": "c", "name": "f", "arguments": {"xs": [1]}}],
            },
        ],
    }
    conversation = create_conversation(snapshot=snapshot)
    snapshot["messages"][0]["calls"][0]["arguments"]["xs"].append(2)
    out = conversation.snapshot()
    out["messages"][0]["calls"][0]["arguments"]["xs"].append(3)
    message = conversation.message("m")
    assert message is not None and message.calls is not None
    assert message.calls[0].arguments == {"xs": [1]}


@pytest.mark.parametrize(
    "snapshot",
    [
        {"sections": [], "messages": []},
        {"id": "t", "sections": [{"id": "s"}], "messages": []},
        {"id": "t", "sections": [], "messages": [{"id": "m", "role": "robot", "content": ""}]},
        {"id": "t", "summary": 1, "sections": [], "messages": []},
        {
            "id": "t",
            "sections": [],
            "messages": [
                {"id": "m", "role": "user", "content": "a"},
                {"id": "m", "role": "user", "content": "b"},
            ],
        },
        "not a snapshot",
    ],
)
def test_an_invalid_snapshot_raises_value_error(snapshot: object) -> None:
    with pytest.raises(ValueError, match="snapshot"):
        create_conversation(snapshot=snapshot)  # type: ignore[arg-type]


# -- tool calls stay with their results ----------------------------------------------------------


def tool_turn(conversation: Conversation, call_ids: Sequence[str]) -> tuple[Message, ...]:
    calls = [{"id": i, "name": "f", "arguments": {}} for i in call_ids]
    return conversation.add(
        [
            {"role": "assistant", "content": "calling", "calls": calls},
            *({"role": "tool", "content": f"result {i}", "tool_call_id": i} for i in call_ids),
        ]
    )


async def test_a_cut_inside_a_tool_group_moves_forward_past_the_results() -> None:
    conversation = create_conversation(summarize=join)
    user = conversation.add({"role": "user", "content": "go"})
    group = tool_turn(conversation, ["c1", "c2"])
    answer = conversation.add({"role": "assistant", "content": "done"})
    question = conversation.add({"role": "user", "content": "next"})
    # keep=4 would cut between the call and its results; forward keeps the group whole.
    section = await conversation.compact(keep=4)
    assert section is not None and section.messages == (user, *group)
    assert conversation.messages() == (answer, question)


async def test_a_cut_moves_back_before_the_caller_when_forward_would_empty_the_tail() -> None:
    conversation = create_conversation(summarize=join)
    user = conversation.add({"role": "user", "content": "go"})
    group = tool_turn(conversation, ["c1", "c2"])
    section = await conversation.compact(keep=1)
    assert section is not None and section.messages == (user,)
    assert conversation.messages() == group


async def test_nothing_folds_when_the_whole_tail_is_one_tool_group_and_keep_asks_for_some() -> None:
    conversation = create_conversation(summarize=join)
    tool_turn(conversation, ["c1", "c2"])
    assert await conversation.compact(keep=1) is None


async def test_an_assistant_turn_still_awaiting_its_results_is_not_folded() -> None:
    conversation = create_conversation(summarize=join)
    user = conversation.add({"role": "user", "content": "go"})
    pending = conversation.add(
        {"role": "assistant", "content": "", "calls": [{"id": "c", "name": "f", "arguments": {}}]}
    )
    section = await conversation.compact()
    assert section is not None and section.messages == (user,)
    assert conversation.messages() == (pending,)


async def test_the_live_tail_never_starts_with_a_tool_message() -> None:
    conversation = create_conversation(summarize=join)
    conversation.add({"role": "user", "content": "go"})
    conversation.add({"role": "tool", "content": "stray result"})  # no caller at all
    last = conversation.add({"role": "user", "content": "next"})
    await conversation.compact(keep=2)
    assert conversation.messages() == (last,)


# -- properties --------------------------------------------------------------------------------

_text = st.text(alphabet="abcAB é", max_size=6)
_roles = st.sampled_from(["user", "assistant", "system"])


@st.composite
def histories(draw: st.DrawFn) -> list[dict]:
    """Random well-formed histories: plain turns and assistant turns with answered calls."""
    items: list[dict] = []
    for turn in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            items.append({"role": draw(_roles), "content": draw(_text)})
            continue
        ids = [f"t{turn}c{k}" for k in range(draw(st.integers(1, 3)))]
        calls = [{"id": i, "name": "f", "arguments": {"n": k}} for k, i in enumerate(ids)]
        items.append({"role": "assistant", "content": draw(_text), "calls": calls})
        items.extend({"role": "tool", "content": draw(_text), "tool_call_id": i} for i in ids)
    return items


def assert_well_formed(conversation: Conversation) -> None:
    tail = conversation.messages()
    assert not tail or tail[0].role != "tool"
    for block in [*(s.messages for s in conversation.sections), tail]:
        issued = {c.id for m in block if m.calls for c in m.calls}
        answered = {m.tool_call_id for m in block if m.role == "tool"}
        # every result's call lives in the same block, and no call's result is elsewhere
        assert answered <= issued
        everywhere = {
            m.tool_call_id
            for b in [*(s.messages for s in conversation.sections), tail]
            for m in b
            if m.role == "tool"
        }
        assert issued & everywhere <= answered


@given(history=histories(), keeps=st.lists(st.integers(0, 6), min_size=1, max_size=3))
def test_no_fold_ever_orphans_a_tool_call_from_its_results(
    history: list[dict], keeps: list[int]
) -> None:
    async def run() -> None:
        conversation = create_conversation(summarize=join, sections=2)
        half = len(history) // 2
        conversation.add(history[:half])
        await conversation.compact(keep=keeps[0])
        assert_well_formed(conversation)
        conversation.add(history[half:])
        for keep in keeps:
            await conversation.compact(keep=keep)
            assert_well_formed(conversation)

    asyncio.run(run())


@given(history=histories(), keep=st.integers(0, 4), query=_text)
def test_search_returns_exactly_the_messages_containing_the_query(
    history: list[dict], keep: int, query: str
) -> None:
    async def run() -> None:
        conversation = create_conversation(summarize=join)
        conversation.add(history)
        await conversation.compact(keep=keep)
        everything = [m for s in conversation.sections for m in s.messages]
        everything.extend(conversation.messages())
        expected = tuple(m for m in everything if query.casefold() in m.content.casefold())
        assert conversation.search(query) == expected

    asyncio.run(run())


@given(history=histories(), keep=st.integers(0, 4), more=histories())
def test_a_snapshot_survives_a_json_round_trip_into_an_equal_conversation(
    history: list[dict], keep: int, more: list[dict]
) -> None:
    async def run() -> None:
        conversation = create_conversation(summarize=join)
        conversation.add(history)
        await conversation.compact(keep=keep)
        conversation.add(more)
        snapshot = conversation.snapshot()
        assert json.loads(json.dumps(snapshot)) == snapshot
        restored = create_conversation(snapshot=json.loads(json.dumps(snapshot)))
        assert restored.snapshot() == snapshot
        assert restored.id == conversation.id and restored.summary == conversation.summary
        assert restored.sections == conversation.sections
        assert restored.view() == conversation.view()

    asyncio.run(run())
