"""ConversationManager: the id-keyed registry with an active pointer and the store seam."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from orkestrel.core.conversation import Conversation
from orkestrel.core.conversation_manager import ConversationManager, create_conversation_manager
from orkestrel.core.conversation_store import (
    ConversationSnapshot,
    MemoryConversationStore,
    create_memory_conversation_store,
)
from orkestrel.core.errors import ConversationError
from orkestrel.core.messages import Message


async def join(messages: Sequence[Message]) -> str:
    return " | ".join(message.content for message in messages)


async def other(messages: Sequence[Message]) -> str:
    return "other"


class CountingStore(MemoryConversationStore):
    """The in-memory store, counting reads so a test can see whether the store was hit."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get(self, id: str) -> ConversationSnapshot | None:
        self.reads += 1
        return await super().get(id)


class RawStore(MemoryConversationStore):
    """A store whose backing data was corrupted outside the kit."""

    async def get(self, id: str) -> ConversationSnapshot | None:
        return {"id": id, "sections": "broken"}  # type: ignore[typeddict-item]


def test_add_mints_an_id_or_uses_the_given_one() -> None:
    manager = create_conversation_manager()
    minted = manager.add()
    named = manager.add({"id": "thread"})
    assert isinstance(minted, Conversation) and minted.id
    assert named.id == "thread" and manager.conversation("thread") is named


def test_add_accepts_keyword_arguments_and_rejects_unknown_keys() -> None:
    manager = create_conversation_manager()
    assert manager.add(id="kw").id == "kw"
    with pytest.raises(TypeError, match="colour"):
        manager.add({"colour": "red"})
    with pytest.raises(TypeError, match="mapping"):
        manager.add("thread")  # type: ignore[arg-type]


def test_the_first_add_activates_and_a_later_add_leaves_active_unchanged() -> None:
    manager = create_conversation_manager()
    assert manager.active is None
    first = manager.add()
    manager.add()
    assert manager.active is first


def test_add_activates_the_new_one_when_nothing_is_active() -> None:
    manager = create_conversation_manager()
    first = manager.add({"id": "a"})
    manager.remove(first.id)
    second = manager.add({"id": "b"})
    assert manager.active is second


async def test_manager_defaults_flow_into_added_conversations() -> None:
    manager = create_conversation_manager(summarize=join, keep=1, sections=1)
    conversation = manager.add()
    assert conversation.summarizable
    for content in ("a", "b", "c"):
        conversation.add({"role": "user", "content": content})
        await conversation.compact()
    assert conversation.count == 1  # keep=1 flowed in
    assert len(conversation.sections) == 1  # sections=1 flowed in


async def test_a_per_add_override_beats_the_manager_default() -> None:
    manager = create_conversation_manager(summarize=join, keep=3)
    conversation = manager.add({"summarize": other, "keep": 0})
    conversation.add({"role": "user", "content": "a"})
    section = await conversation.compact()
    assert section is not None and section.summary == "other"
    assert conversation.count == 0
    assert manager.add({"summarize": None}).summarizable is True  # None means omitted


def test_an_existing_id_is_overwritten_in_place_and_active_follows() -> None:
    manager = create_conversation_manager()
    old = manager.add({"id": "a"})
    manager.add({"id": "b"})
    new = manager.add({"id": "a"})
    assert new is not old
    assert manager.count == 2
    assert manager.conversations() == (new, manager.conversation("b"))
    assert manager.active is new


def test_conversations_lists_in_insertion_order_and_lookup_misses_with_none() -> None:
    manager = create_conversation_manager()
    a, b, c = manager.add(), manager.add(), manager.add()
    assert manager.conversations() == (a, b, c)
    assert manager.conversation("nope") is None


def test_switch_repoints_active_and_an_unknown_id_changes_nothing() -> None:
    manager = create_conversation_manager()
    a, b = manager.add(), manager.add()
    assert manager.switch(b.id) is b and manager.active is b
    assert manager.switch("nope") is None
    assert manager.active is b
    assert manager.switch(a.id) is a


def test_remove_single_and_batch_report_and_clear_active_when_removed() -> None:
    manager = create_conversation_manager()
    a, b, c = manager.add(), manager.add(), manager.add()
    assert manager.remove(b.id) is True and manager.active is a
    assert manager.remove("nope") is False
    assert manager.remove([a.id, "nope"]) is True
    assert manager.active is None
    assert manager.conversations() == (c,) and manager.count == 1


def test_clear_removes_everything_and_clears_active() -> None:
    manager = create_conversation_manager()
    manager.add()
    manager.add()
    manager.clear()
    assert manager.count == 0 and manager.active is None and manager.conversations() == ()


def test_invalid_manager_options_raise() -> None:
    with pytest.raises(ConversationError) as caught:
        create_conversation_manager(sections=0)
    assert caught.value.code == "SECTIONS"
    with pytest.raises(TypeError, match="store"):
        create_conversation_manager(store=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep"):
        ConversationManager(keep=-1)


# -- the store seam ---------------------------------------------------------------------------


async def test_open_of_a_registered_id_activates_it_without_a_store_hit() -> None:
    store = CountingStore()
    manager = create_conversation_manager(store=store)
    manager.add({"id": "a"})
    b = manager.add({"id": "b"})
    assert await manager.open("b") is b
    assert manager.active is b and store.reads == 0


async def test_open_hydrates_from_the_store_and_activates_into_a_non_empty_registry() -> None:
    store = create_memory_conversation_store()
    source = create_conversation_manager(summarize=join, keep=1, store=store)
    thread = source.add({"id": "thread"})
    thread.add([{"role": "user", "content": "Ada"}, {"role": "assistant", "content": "Hi Ada"}])
    await thread.compact()
    assert await source.save("thread") is True

    fresh = create_conversation_manager(summarize=join, store=store)
    fresh.add({"id": "other"})
    opened = await fresh.open("thread")
    assert opened is not None and fresh.active is opened
    assert opened.snapshot() == thread.snapshot()
    assert opened.search("ada") == thread.search("ada")
    opened.add({"role": "user", "content": "again"})
    assert await opened.compact() is not None  # the summarizer flowed in on hydrate


async def test_open_of_an_unknown_id_is_none_and_leaves_active() -> None:
    manager = create_conversation_manager(store=create_memory_conversation_store())
    a = manager.add()
    assert await manager.open("nope") is None
    assert manager.active is a
    assert await create_conversation_manager().open("nope") is None


async def test_open_treats_a_malformed_stored_snapshot_as_absent() -> None:
    manager = create_conversation_manager(store=RawStore())
    assert await manager.open("x") is None and manager.count == 0


async def test_save_is_false_without_a_store_or_for_an_unknown_id() -> None:
    bare = create_conversation_manager()
    bare.add({"id": "a"})
    assert await bare.save("a") is False
    store = create_memory_conversation_store()
    manager = create_conversation_manager(store=store)
    assert await manager.save("nope") is False
    assert await store.get("nope") is None


async def test_save_persists_the_snapshot_under_its_id() -> None:
    store = create_memory_conversation_store()
    manager = create_conversation_manager(store=store)
    conversation = manager.add({"id": "a"})
    conversation.add({"role": "user", "content": "hi"})
    assert await manager.save("a") is True
    assert await store.get("a") == conversation.snapshot()
