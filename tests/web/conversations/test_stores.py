"""What only the Django store promises: normalized rows, minimal writes, constant queries,
owner scoping, strict ids, and the async methods running inside an event loop."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from conversations.models import Conversation, Message, Section
from conversations.stores import DjangoConversationStore
from conversations.writer import fingerprint
from orkestrel.core import Conversation as KitConversation
from orkestrel.core import create_conversation

from .helpers import chat, compacted, join, new_id

pytestmark = pytest.mark.django_db


def history(size: int, sections: int = 2) -> KitConversation:
    """A conversation of ``size`` messages, ``sections`` compactions deep, four live."""
    conversation = create_conversation(id=new_id(), summarize=join, keep=4)
    exchanges = size // 2
    per = exchanges // (sections + 1)
    for round in range(sections):
        chat(conversation, per, start=round * per)
        async_to_sync(conversation.compact)()
    chat(conversation, exchanges - per * sections, start=sections * per)
    return conversation


def writes(queries: list[dict]) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].split()[0] in {"INSERT", "UPDATE", "DELETE"}]


# -- rows -------------------------------------------------------------------------------------


def test_the_snapshot_lands_in_normalized_rows(django_store, user) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    row = Conversation.objects.get(pk=conversation.id)
    assert row.owner == user and row.summary == conversation.summary
    section = Section.objects.get(conversation=row)
    assert section.section_id == conversation.sections[0].id and section.position == 0
    originals = list(section.messages.order_by("position"))
    assert [m.message_id for m in originals] == [m.id for m in conversation.sections[0].messages]
    assert originals[2].calls == [
        {"id": "c1", "name": "remember", "arguments": {"name": "Ada", "tags": ["x"]}}
    ]
    assert originals[3].tool_call_id == "c1" and originals[3].calls is None
    tail = list(row.messages.filter(section__isnull=True).order_by("position"))
    assert [m.message_id for m in tail] == [m.id for m in conversation.messages()]
    assert tail[0].images == ["aGk="]
    positions = [m.position for m in row.messages.order_by("position")]
    assert positions == sorted(set(positions)) and len(positions) == 6


def test_a_turn_inserts_only_the_new_messages_and_rewrites_nothing(django_store) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    before = dict(Message.objects.values_list("message_id", "pk"))
    chat(conversation, 1)
    with CaptureQueriesContext(connection) as queries:
        django_store.set_sync(conversation.snapshot())
    changes = writes(queries.captured_queries)
    assert [sql.split()[0] for sql in changes] == ["UPDATE", "INSERT"]
    assert 'UPDATE "conversations_conversation"' in changes[0]
    after = dict(Message.objects.values_list("message_id", "pk"))
    assert {k: after[k] for k in before} == before and len(after) == len(before) + 2


def test_a_compaction_moves_the_folded_rows_into_the_new_section_in_place(
    django_store,
) -> None:
    conversation = create_conversation(id=new_id(), summarize=join, keep=2)
    chat(conversation, 3)
    django_store.set_sync(conversation.snapshot())
    before = dict(Message.objects.values_list("message_id", "pk"))
    async_to_sync(conversation.compact)()
    with CaptureQueriesContext(connection) as queries:
        django_store.set_sync(conversation.snapshot())
    kinds = [sql.split()[0] for sql in writes(queries.captured_queries)]
    # The rollup, the section, one ranged re-parent of the four folded messages.
    assert kinds == ["UPDATE", "INSERT", "UPDATE"]
    assert dict(Message.objects.values_list("message_id", "pk")) == before
    section = Section.objects.get()
    assert section.messages.count() == 4
    assert Message.objects.filter(section__isnull=True).count() == 2


def test_saving_an_unchanged_snapshot_writes_nothing(django_store) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    updated = Conversation.objects.get().updated
    with CaptureQueriesContext(connection) as queries:
        django_store.set_sync(conversation.snapshot())
    assert writes(queries.captured_queries) == []
    assert Conversation.objects.get().updated == updated


# -- constant queries -------------------------------------------------------------------------


def turn_cost(store: DjangoConversationStore, size: int) -> tuple[int, int, int]:
    """Queries to save a two-message turn, to compact, and to read back, at ``size`` messages."""
    conversation = history(size)
    store.set_sync(conversation.snapshot())
    chat(conversation, 1, start=size)
    with CaptureQueriesContext(connection) as turn:
        store.set_sync(conversation.snapshot())
    async_to_sync(conversation.compact)()
    with CaptureQueriesContext(connection) as fold:
        store.set_sync(conversation.snapshot())
    with CaptureQueriesContext(connection) as read:
        assert store.get_sync(conversation.id) == conversation.snapshot()
    return len(turn), len(fold), len(read)


def test_a_turn_a_compaction_and_a_read_cost_the_same_queries_at_10_and_1000(
    django_store, django_assert_max_num_queries
) -> None:
    small = turn_cost(django_store, 10)
    large = turn_cost(django_store, 1000)
    assert small == large
    turn, fold, read = large
    assert read == 3
    assert turn <= 7 and fold <= 9
    conversation = history(1000)
    django_store.set_sync(conversation.snapshot())
    chat(conversation, 1, start=5000)
    with django_assert_max_num_queries(turn):
        django_store.set_sync(conversation.snapshot())


def test_a_long_uncompacted_tail_still_saves_a_turn_in_constant_queries(django_store) -> None:
    costs = []
    for size in (10, 1000):
        conversation = create_conversation(id=new_id())
        chat(conversation, size // 2)
        django_store.set_sync(conversation.snapshot())
        chat(conversation, 1, start=size)
        with CaptureQueriesContext(connection) as queries:
            django_store.set_sync(conversation.snapshot())
        costs.append(len(queries))
        conversation.clear()
        with CaptureQueriesContext(connection) as cleared:
            django_store.set_sync(conversation.snapshot())
        costs.append(len(cleared))
        assert django_store.get_sync(conversation.id)["messages"] == []
    assert costs[:2] == costs[2:]


# -- snapshots the kit never makes ------------------------------------------------------------


def test_a_known_section_relisted_with_other_messages_is_still_saved_exactly(
    django_store,
) -> None:
    conversation = compacted()
    snapshot = conversation.snapshot()
    django_store.set_sync(snapshot)
    section = snapshot["sections"][0]
    moved = snapshot["messages"].pop(0)
    section["messages"] = [
        moved,
        *section["messages"][1:],
        {"id": "new", "role": "user", "content": "n"},
    ]
    django_store.set_sync(snapshot)
    assert django_store.get_sync(snapshot["id"]) == snapshot


def test_reordered_messages_and_sections_read_back_in_the_new_order(django_store) -> None:
    conversation = history(40, sections=3)
    snapshot = conversation.snapshot()
    django_store.set_sync(snapshot)
    snapshot["sections"].reverse()
    snapshot["messages"].reverse()
    snapshot["sections"][0]["messages"].reverse()
    django_store.set_sync(snapshot)
    assert django_store.get_sync(snapshot["id"]) == snapshot


def test_a_snapshot_repeating_a_message_id_is_refused_and_saves_nothing(django_store) -> None:
    snapshot = compacted().snapshot()
    snapshot["messages"].append(snapshot["sections"][0]["messages"][0])
    with pytest.raises(ValueError, match="appears twice"):
        django_store.set_sync(snapshot)
    assert not Conversation.objects.exists()


def test_a_snapshot_repeating_a_section_id_is_refused(django_store) -> None:
    snapshot = compacted().snapshot()
    snapshot["sections"].append({**snapshot["sections"][0], "messages": []})
    with pytest.raises(ValueError, match="unique ids"):
        django_store.set_sync(snapshot)


# -- ids and owners ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["thread", "", "0" * 32, "6F9619FF-8B86-4011-B42D-00C04FC964FF", 42]
)
def test_ids_other_than_canonical_uuids_are_absent_and_cannot_be_saved(django_store, bad) -> None:
    assert django_store.get_sync(bad) is None
    django_store.delete_sync(bad)
    snapshot = {"id": bad, "sections": [], "messages": []}
    with pytest.raises(ValueError):
        django_store.set_sync(snapshot)


def test_a_store_sees_only_its_owners_conversations(django_store, other_user) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    theirs = DjangoConversationStore(owner=other_user.pk)
    assert theirs.get_sync(conversation.id) is None
    with pytest.raises(PermissionError):
        theirs.set_sync(conversation.snapshot())
    theirs.delete_sync(conversation.id)
    assert django_store.get_sync(conversation.id) == conversation.snapshot()


def test_an_ownerless_store_reads_every_conversation_but_cannot_create_one(django_store) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    operator = DjangoConversationStore()
    assert operator.get_sync(conversation.id) == conversation.snapshot()
    chat(conversation, 1)
    operator.set_sync(conversation.snapshot())
    assert django_store.get_sync(conversation.id) == conversation.snapshot()
    with pytest.raises(ValueError, match="owner"):
        operator.set_sync(compacted().snapshot())


def test_a_new_conversation_keeps_the_rows_it_did_not_come_from(django_store, user) -> None:
    row = Conversation.objects.create(owner=user, title="Named")
    conversation = create_conversation(id=str(row.pk))
    chat(conversation, 1)
    django_store.set_sync(conversation.snapshot())
    row.refresh_from_db()
    assert row.title == "Named" and row.messages.count() == 2


def test_delete_cascades_to_sections_and_messages(django_store) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    django_store.delete_sync(conversation.id)
    assert not Section.objects.exists() and not Message.objects.exists()


# -- async, inside a running loop --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_async_methods_work_from_a_running_event_loop(user) -> None:
    store = DjangoConversationStore(owner=user)
    conversation = create_conversation(id=new_id(), summarize=join, keep=1)
    chat(conversation, 2)
    await conversation.compact()
    await store.set(conversation.snapshot())
    assert await store.get(conversation.id) == conversation.snapshot()
    await store.delete(conversation.id)
    assert await store.get(conversation.id) is None


def test_messages_swapped_between_a_section_and_the_tail_land_where_the_snapshot_says(
    django_store,
) -> None:
    def message(id: str) -> dict:
        return {"id": id, "role": "user", "content": id}

    id = new_id()
    steps = [
        {"id": id, "sections": [], "messages": [message("p"), message("m"), message("q")]},
        {
            "id": id,
            "summary": "s",
            "sections": [{"id": "k", "summary": "k", "messages": [message("p"), message("q")]}],
            "messages": [message("m")],
        },
        # m enters the section between p and q as they leave it: no range may sweep it along.
        {
            "id": id,
            "summary": "s",
            "sections": [{"id": "k", "summary": "k", "messages": [message("m")]}],
            "messages": [message("p"), message("q")],
        },
    ]
    for snapshot in steps:
        django_store.set_sync(snapshot)
        assert django_store.get_sync(id) == snapshot


def test_the_section_fingerprint_follows_its_originals_ids_in_order(django_store) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    section = conversation.snapshot()["sections"][0]
    stored = Section.objects.get().fingerprint
    assert stored == fingerprint(section["messages"])
    assert fingerprint(section["messages"][::-1]) != stored
    assert fingerprint([{"id": "a:1"}]) != fingerprint([{"id": "a"}, {"id": "1"}])


def test_rows_another_writer_added_or_removed_are_reconciled_on_the_next_save(
    django_store,
) -> None:
    conversation = compacted()
    snapshot = conversation.snapshot()
    django_store.set_sync(snapshot)
    lost = Message.objects.filter(section__isnull=False).order_by("position").first()
    lost.delete()
    django_store.set_sync(snapshot)
    assert django_store.get_sync(conversation.id) == snapshot


def test_a_position_tie_left_by_another_writer_never_moves_the_wrong_row(
    django_store, user
) -> None:
    conversation = create_conversation(id=new_id(), summarize=join, keep=2)
    conversation.add([{"role": "user", "content": text} for text in "abc"])
    django_store.set_sync(conversation.snapshot())
    row = Conversation.objects.get(pk=conversation.id)
    b = Message.objects.get(content="b")
    # Another writer appends "x" and reuses b's position: a tie inside the tail.
    Message.objects.create(
        conversation=row, message_id="x", position=b.position, role="user", content="x"
    )
    snapshot = django_store.get_sync(conversation.id)
    assert [m["content"] for m in snapshot["messages"]] == ["a", "b", "x", "c"]
    reopened = create_conversation(snapshot=snapshot, summarize=join, keep=2)
    async_to_sync(reopened.compact)()
    django_store.set_sync(reopened.snapshot())
    got = django_store.get_sync(conversation.id)
    assert [m["content"] for m in got["sections"][0]["messages"]] == ["a", "b"]
    assert [m["content"] for m in got["messages"]] == ["x", "c"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs concurrent writers")
def test_concurrent_first_saves_of_one_conversation_both_succeed(user) -> None:
    conversation = compacted()
    snapshots = []
    for turn in range(2):
        chat(conversation, 1, start=turn)
        snapshots.append(conversation.snapshot())
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def save(snapshot) -> None:
        try:
            barrier.wait()
            DjangoConversationStore(owner=user.pk).set_sync(snapshot)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(s,)) for s in snapshots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert DjangoConversationStore().get_sync(conversation.id) in snapshots


# -- append (a run's start) ------------------------------------------------------------------


def test_append_lands_exactly_as_a_set_of_the_longer_snapshot_would(django_store) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    message = {"id": "m-new", "role": "user", "content": "one more"}

    returned = django_store.append_sync(conversation.id, message)

    conversation.add(message)
    assert django_store.get_sync(conversation.id) == conversation.snapshot()
    # What a run's start builds its agent from: the stored snapshot, read under the lock.
    assert returned == conversation.snapshot()


@pytest.mark.parametrize("size", [10, 1_000])
def test_append_costs_the_same_queries_at_any_history_length(django_store, size) -> None:
    conversation = history(size)
    django_store.set_sync(conversation.snapshot())
    with CaptureQueriesContext(connection) as queries:
        django_store.append_sync(conversation.id, {"role": "user", "content": "next"})
    assert len(writes(queries.captured_queries)) == 2  # the message and ``updated``
    assert len(queries.captured_queries) <= 8  # with the lock read and savepoints


@pytest.mark.parametrize("where", ["live tail", "folded section"])
def test_append_of_a_stored_id_is_refused_and_changes_nothing(django_store, where) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    before = django_store.get_sync(conversation.id)
    snapshot = conversation.snapshot()
    assert snapshot["sections"], "the fixture folds history into a section"
    if where == "live tail":
        taken = conversation.messages()[-1].id
    else:
        taken = snapshot["sections"][0]["messages"][0]["id"]

    with pytest.raises(ValueError, match="stored already"):
        django_store.append_sync(conversation.id, {"id": taken, "role": "user", "content": "x"})

    assert django_store.get_sync(conversation.id) == before


def test_append_to_another_users_conversation_is_refused(django_store, other_user) -> None:
    conversation = compacted()
    django_store.set_sync(conversation.snapshot())
    stranger = DjangoConversationStore(owner=other_user)

    with pytest.raises(PermissionError):
        stranger.append_sync(conversation.id, {"role": "user", "content": "mine now"})

    assert Message.objects.filter(content="mine now").count() == 0
