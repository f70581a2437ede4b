"""One behaviour suite, two stores: the kit's in-memory store and the Django-backed one must agree.

Every test takes the parametrized ``store`` fixture, so a behaviour that holds for the kit's
reference store and not for ours fails here.
"""

from __future__ import annotations

import copy
import json

import pytest
from asgiref.sync import async_to_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orkestrel.core import (
    ConversationManager,
    ConversationStore,
    create_conversation,
    create_memory_conversation_store,
)

from .helpers import chat, compacted, join, new_id

get = async_to_sync


@pytest.fixture(params=["memory", "django"])
def store(request: pytest.FixtureRequest, db) -> ConversationStore:
    # ``db`` for both: pytest-django sets the test database up only for static requests.
    if request.param == "memory":
        return create_memory_conversation_store()
    return request.getfixturevalue("django_store")


def save(store: ConversationStore, snapshot) -> None:
    async_to_sync(store.set)(snapshot)


def load(store: ConversationStore, id: str):
    return async_to_sync(store.get)(id)


def test_both_stores_satisfy_the_kit_store_protocol(store: ConversationStore) -> None:
    assert isinstance(store, ConversationStore)


def test_round_trip_keeps_sections_originals_tail_and_rollup(store: ConversationStore) -> None:
    conversation = compacted()
    snapshot = conversation.snapshot()
    save(store, snapshot)
    got = load(store, conversation.id)
    assert got == snapshot
    assert got["summary"] == conversation.summary
    section = got["sections"][0]
    assert [m["role"] for m in section["messages"]] == ["system", "user", "assistant", "tool"]
    assert section["messages"][2]["calls"][0]["arguments"] == {"name": "Ada", "tags": ["x"]}
    assert [m["content"] for m in got["messages"]] == ["Noted", "What is my name?"]
    assert got["messages"][0]["images"] == ["aGk="]
    assert create_conversation(snapshot=got).snapshot() == snapshot


def test_a_snapshot_without_compaction_has_no_summary_key(store: ConversationStore) -> None:
    conversation = create_conversation(id=new_id())
    chat(conversation, 2)
    save(store, conversation.snapshot())
    got = load(store, conversation.id)
    assert "summary" not in got and got["sections"] == []
    assert got == conversation.snapshot()


def test_an_empty_rollup_is_kept_apart_from_no_rollup(store: ConversationStore) -> None:
    snapshot = {"id": new_id(), "summary": "", "sections": [], "messages": []}
    save(store, snapshot)
    assert load(store, snapshot["id"]) == snapshot


def test_what_get_returns_is_plain_json(store: ConversationStore) -> None:
    conversation = compacted()
    save(store, conversation.snapshot())
    got = load(store, conversation.id)
    assert json.loads(json.dumps(got)) == got


def test_a_stored_snapshot_is_detached_from_the_callers_copy(store: ConversationStore) -> None:
    conversation = compacted()
    snapshot = conversation.snapshot()
    expected = copy.deepcopy(snapshot)
    save(store, snapshot)
    snapshot["messages"].clear()
    snapshot["sections"][0]["messages"][2]["calls"][0]["arguments"]["tags"].append("in")
    got = load(store, conversation.id)
    got["sections"][0]["messages"][2]["calls"][0]["arguments"]["tags"].append("out")
    assert load(store, conversation.id) == expected


def test_set_upserts_a_growing_conversation(store: ConversationStore) -> None:
    conversation = compacted()
    save(store, conversation.snapshot())
    chat(conversation, 3)
    save(store, conversation.snapshot())
    assert load(store, conversation.id) == conversation.snapshot()
    get(conversation.compact)(keep=2)
    chat(conversation, 1, start=3)
    save(store, conversation.snapshot())
    assert load(store, conversation.id) == conversation.snapshot()
    assert len(load(store, conversation.id)["sections"]) == 2


def test_set_replaces_a_snapshot_with_an_unrelated_one_under_the_same_id(
    store: ConversationStore,
) -> None:
    first = compacted()
    save(store, first.snapshot())
    second = create_conversation(id=first.id)
    chat(second, 2)
    save(store, second.snapshot())
    assert load(store, first.id) == second.snapshot()


def test_removed_and_cleared_tail_messages_disappear(store: ConversationStore) -> None:
    conversation = compacted()
    chat(conversation, 3)
    save(store, conversation.snapshot())
    conversation.remove(conversation.messages()[1].id)
    save(store, conversation.snapshot())
    assert load(store, conversation.id) == conversation.snapshot()
    conversation.clear()
    save(store, conversation.snapshot())
    got = load(store, conversation.id)
    assert got["messages"] == [] and got == conversation.snapshot()


def test_a_section_cap_collapse_is_stored_as_one_merged_section(
    store: ConversationStore,
) -> None:
    conversation = create_conversation(id=new_id(), summarize=join, keep=1, sections=2)
    for round in range(4):
        chat(conversation, 2, start=round * 2)
        get(conversation.compact)()
        save(store, conversation.snapshot())
        assert load(store, conversation.id) == conversation.snapshot()
    assert len(conversation.sections) == 2


def test_delete_drops_it_and_an_absent_id_is_a_no_op(store: ConversationStore) -> None:
    conversation = compacted()
    save(store, conversation.snapshot())
    get(store.delete)(conversation.id)
    assert load(store, conversation.id) is None
    get(store.delete)(conversation.id)
    get(store.delete)(new_id())


def test_get_of_an_unknown_id_is_none(store: ConversationStore) -> None:
    assert load(store, new_id()) is None


def test_two_ids_coexist(store: ConversationStore) -> None:
    a, b = compacted(), compacted()
    save(store, a.snapshot())
    save(store, b.snapshot())
    # The kit's ids repeat across the two (the same tool call id "c1"): only per conversation.
    assert load(store, a.id) == a.snapshot() and load(store, b.id) == b.snapshot()
    get(store.delete)(a.id)
    assert load(store, a.id) is None and load(store, b.id) == b.snapshot()


@pytest.mark.parametrize(
    "bad",
    [
        {"id": 1, "sections": [], "messages": []},
        {"sections": [], "messages": []},
        {"id": "x", "sections": [], "messages": [{"id": "m", "role": "robot", "content": ""}]},
        {"id": "x", "summary": 3, "sections": [], "messages": []},
    ],
)
def test_a_malformed_snapshot_is_refused_with_value_error(store, bad) -> None:
    with pytest.raises(ValueError, match="snapshot"):
        save(store, bad)


def test_a_fresh_manager_opens_a_saved_conversation_and_keeps_compacting(
    store: ConversationStore,
) -> None:
    writer = ConversationManager(summarize=join, keep=2, store=store)
    conversation = writer.add(id=new_id())
    chat(conversation, 3)
    get(conversation.compact)()
    assert get(writer.save)(conversation.id) is True

    reader = ConversationManager(summarize=join, keep=2, store=store)
    opened = get(reader.open)(conversation.id)
    assert opened is not None and reader.active is opened
    assert opened.snapshot() == conversation.snapshot()
    assert opened.rehydrate(opened.sections[0].id) == conversation.sections[0].messages
    chat(opened, 2, start=3)
    section = get(opened.compact)()
    assert section is not None and len(opened.sections) == 2
    assert get(reader.save)(opened.id) is True
    assert load(store, opened.id) == opened.snapshot()
    assert [m.content for m in opened.search("question 0")] == ["question 0"]


def test_opening_an_unknown_id_finds_nothing(store: ConversationStore) -> None:
    assert get(ConversationManager(store=store).open)(new_id()) is None


# One random history per example: adds (plain, tool round trips, images), removals and
# compactions with random keep and caps, saved after every step; both stores must return
# exactly the conversation's snapshot every time.
_STEP = st.one_of(
    st.tuples(st.just("chat"), st.integers(1, 3)),
    st.tuples(st.just("tool"), st.integers(1, 2)),
    st.tuples(st.just("image"), st.just(0)),
    st.tuples(st.just("remove"), st.integers(0, 5)),
    st.tuples(st.just("compact"), st.integers(0, 4)),
    st.tuples(st.just("clear"), st.just(0)),
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(_STEP, min_size=1, max_size=12),
    cap=st.none() | st.integers(1, 3),
)
def test_any_history_saved_after_every_step_reads_back_exactly(
    store: ConversationStore, steps, cap
) -> None:
    conversation = create_conversation(id=new_id(), summarize=join, sections=cap)
    for number, (kind, size) in enumerate(steps):
        if kind == "chat":
            chat(conversation, size, start=number * 10)
        elif kind == "tool":
            calls = [
                {"id": f"t{number}-{i}", "name": "look", "arguments": {"i": i}} for i in range(size)
            ]
            conversation.add({"role": "assistant", "content": "", "calls": calls})
            conversation.add(
                [
                    {"role": "tool", "content": f"r{i}", "tool_call_id": call["id"]}
                    for i, call in enumerate(calls)
                ]
            )
        elif kind == "image":
            conversation.add({"role": "user", "content": "see", "images": ["aGk=", "aGVsbG8="]})
        elif kind == "remove" and conversation.count:
            conversation.remove(conversation.messages()[size % conversation.count].id)
        elif kind == "compact":
            get(conversation.compact)(keep=size)
        elif kind == "clear":
            conversation.clear()
        save(store, conversation.snapshot())
        assert load(store, conversation.id) == conversation.snapshot()


def test_both_stores_return_the_same_snapshot_for_awkward_content(django_store) -> None:
    memory = create_memory_conversation_store()
    snapshot = {
        "id": new_id(),
        "summary": "Résumé — 摘要 🧵",
        "sections": [
            {
                "id": "s-1",
                "summary": "",
                "messages": [
                    {"id": "a", "role": "user", "content": ""},
                    {
                        "id": "b",
                        "role": "assistant",
                        "content": "tab\there\nnewline 'quotes' \"double\" \\ backslash",
                        "calls": [
                            {
                                "id": "c",
                                "name": "deep",
                                "arguments": {"n": [1, 2.5, None, True], "o": {"k": {}}},
                            }
                        ],
                    },
                    {"id": "c-result", "role": "tool", "content": "{}", "tool_call_id": "c"},
                ],
            }
        ],
        "messages": [
            {"id": "d", "role": "user", "content": "😀 " * 50, "images": []},
            {"id": "e", "role": "assistant", "content": "x" * 100_000, "calls": []},
        ],
    }
    for store in (memory, django_store):
        save(store, snapshot)
    got = load(django_store, snapshot["id"])
    assert got == load(memory, snapshot["id"]) == snapshot
    assert json.loads(json.dumps(got)) == got
