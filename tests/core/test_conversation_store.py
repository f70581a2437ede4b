"""The in-memory conversation store and the snapshot read-boundary guards."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

import pytest

from orkestrel.core.conversation import Conversation, Section, create_conversation
from orkestrel.core.conversation_store import (
    ConversationSnapshot,
    ConversationStore,
    MemoryConversationStore,
    create_memory_conversation_store,
    is_conversation_snapshot,
    is_section,
)
from orkestrel.core.messages import Message


async def join(messages: Sequence[Message]) -> str:
    return " | ".join(message.content for message in messages)


async def compacted(id: str = "thread") -> Conversation:
    """A real conversation with a compacted section, a live tail and a rollup summary."""
    conversation = create_conversation(id=id, summarize=join, keep=1)
    conversation.add(
        [
            {"role": "user", "content": "My name is Ada"},
            {
                "role": "assistant",
                "content": "",
                "calls": [
                    {"id": "c1", "name": "remember", "arguments": {"name": "Ada", "tags": ["x"]}}
                ],
            },
            {"role": "tool", "content": "ok", "tool_call_id": "c1"},
            {"role": "assistant", "content": "Noted", "images": ["aGk="]},
            {"role": "user", "content": "What is my name?"},
        ]
    )
    await conversation.compact()
    assert conversation.sections and conversation.summary is not None and conversation.count
    return conversation


def test_memory_store_satisfies_the_store_protocol() -> None:
    assert isinstance(create_memory_conversation_store(), ConversationStore)
    assert isinstance(create_memory_conversation_store(), MemoryConversationStore)


async def test_set_then_get_round_trips_a_real_snapshot_and_stays_json_portable() -> None:
    store = create_memory_conversation_store()
    snapshot = (await compacted()).snapshot()
    await store.set(snapshot)
    got = await store.get("thread")
    assert got == snapshot
    assert json.loads(json.dumps(got)) == got
    restored = create_conversation(snapshot=got)
    assert restored.snapshot() == snapshot


async def test_get_of_an_absent_id_is_none() -> None:
    assert await create_memory_conversation_store().get("nope") is None


async def test_the_store_deep_copies_in_and_out() -> None:
    store = create_memory_conversation_store()
    snapshot = (await compacted()).snapshot()
    expected = json.loads(json.dumps(snapshot))
    await store.set(snapshot)
    snapshot["messages"].clear()
    snapshot["sections"][0]["messages"][1]["calls"][0]["arguments"]["tags"].append("in")
    got = await store.get("thread")
    assert got is not None
    got["sections"][0]["messages"][1]["calls"][0]["arguments"]["tags"].append("out")
    assert await store.get("thread") == expected


async def test_set_upserts_under_the_snapshots_own_id() -> None:
    store = create_memory_conversation_store()
    conversation = await compacted()
    await store.set(conversation.snapshot())
    conversation.add({"role": "assistant", "content": "Ada"})
    await store.set(conversation.snapshot())
    got = await store.get("thread")
    assert got is not None and got["messages"][-1]["content"] == "Ada"


async def test_delete_drops_one_and_an_absent_id_is_a_no_op() -> None:
    store = create_memory_conversation_store()
    await store.set((await compacted()).snapshot())
    await store.delete("thread")
    assert await store.get("thread") is None
    await store.delete("thread")  # no error


async def test_two_distinct_ids_coexist() -> None:
    store = create_memory_conversation_store()
    a, b = (await compacted("a")).snapshot(), (await compacted("b")).snapshot()
    await store.set(a)
    await store.set(b)
    assert await store.get("a") == a and await store.get("b") == b


async def test_set_rejects_a_malformed_snapshot_with_value_error() -> None:
    with pytest.raises(ValueError, match="snapshot"):
        await create_memory_conversation_store().set({"id": 1})  # type: ignore[typeddict-item]


# -- guards ------------------------------------------------------------------------------------


async def test_is_conversation_snapshot_accepts_real_revived_and_empty_snapshots() -> None:
    snapshot = (await compacted()).snapshot()
    assert is_conversation_snapshot(snapshot)
    assert is_conversation_snapshot(json.loads(json.dumps(snapshot)))
    empty: ConversationSnapshot = {"id": "e", "sections": [], "messages": []}
    assert is_conversation_snapshot(empty)
    assert is_conversation_snapshot({**empty, "summary": "s"})


class Exploding(Mapping[str, object]):
    """A mapping whose every read raises: a guard must still answer."""

    def __getitem__(self, key: str) -> object:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


_MESSAGE = {"id": "m", "role": "user", "content": "hi"}
_SECTION = {"id": "s", "summary": "sum", "messages": [_MESSAGE]}


@pytest.mark.parametrize(
    "value",
    [
        None,
        "snapshot",
        ["id", "sections", "messages"],
        Exploding(),
        {"sections": [], "messages": []},
        {"id": 1, "sections": [], "messages": []},
        {"id": "t", "summary": None, "sections": [], "messages": []},
        {"id": "t", "summary": 3, "sections": [], "messages": []},
        {"id": "t", "sections": {}, "messages": []},
        {"id": "t", "sections": [], "messages": "m"},
        {"id": "t", "sections": []},
        {"id": "t", "sections": [_SECTION, {"id": "s2", "summary": "x"}], "messages": []},
        {"id": "t", "sections": [{**_SECTION, "summary": 1}], "messages": []},
        {"id": "t", "sections": [{**_SECTION, "messages": [{"id": "m"}]}], "messages": []},
        {"id": "t", "sections": [Exploding()], "messages": []},
        {"id": "t", "sections": [], "messages": [_MESSAGE, {**_MESSAGE, "role": "robot"}]},
        {"id": "t", "sections": [], "messages": [{**_MESSAGE, "calls": [{"id": "c"}]}]},
        {"id": "t", "sections": [], "messages": [{**_MESSAGE, "images": "aGk="}]},
        {"id": "t", "sections": [], "messages": [{**_MESSAGE, "content": None}]},
    ],
)
def test_is_conversation_snapshot_rejects_malformed_shapes_without_raising(value: object) -> None:
    assert is_conversation_snapshot(value) is False


def test_is_section_accepts_a_section_and_its_dict_and_rejects_malformed_ones() -> None:
    section = Section("s", "sum", (Message("m", "user", "hi"),))
    assert is_section(section) and is_section(section.to_dict()) and is_section(_SECTION)
    assert is_section({"id": "s", "summary": "", "messages": []})
    for bad in (None, 3, Exploding(), {"id": "s", "summary": "x"}, {**_SECTION, "id": None}):
        assert is_section(bad) is False
