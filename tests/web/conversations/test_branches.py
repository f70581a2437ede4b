"""Branches in storage: alternatives stay stored while the kit's store reads and writes only the
chosen branch; choosing flips them back; a folded point is no longer offered."""

from __future__ import annotations

import pytest

from conversations.branches import (
    BranchBusy,
    NoSuchBranch,
    NotBranchable,
    Redo,
    conversation_branches,
    select_branch,
    start_alternative,
)
from conversations.forks import fork_conversation
from conversations.models import Conversation, Message, Run
from conversations.services import list_conversations
from conversations.stores import DjangoConversationStore
from conversations.transfer import export_records
from orkestrel.core import create_conversation

from .helpers import new_id

pytestmark = pytest.mark.django_db


def _say(store: DjangoConversationStore, key: str, *turns: tuple[str, str]) -> None:
    """Append messages (role, content) the way a run does: ``set`` of the stored snapshot."""
    snapshot = store.get_sync(key)
    conversation = create_conversation(
        **({"snapshot": snapshot} if snapshot is not None else {"id": key})
    )
    conversation.add([{"role": role, "content": content} for role, content in turns])
    store.set_sync(conversation.snapshot())


def _chosen(store: DjangoConversationStore, key: str) -> list[str]:
    snapshot = store.get_sync(key)
    assert snapshot is not None
    return [message["content"] for message in snapshot["messages"]]


def _ids(key: str) -> dict[str, str]:
    return dict(Message.every.filter(conversation_id=key).values_list("content", "message_id"))


def _run(key: str) -> int:
    return Run.objects.create(conversation_id=key, status="done").pk


@pytest.fixture
def key(user, django_store) -> str:
    key = new_id()
    _say(django_store, key, ("user", "u1"), ("assistant", "a1"), ("user", "u2"))
    _say(django_store, key, ("assistant", "a2"))
    return key


def test_a_regenerate_hides_the_answer_and_choosing_brings_it_back_unchanged(django_store, key):
    ids = _ids(key)
    start_alternative(key, Redo("regenerate", ids["a1"]), _run(key))
    assert _chosen(django_store, key) == ["u1"]
    _say(django_store, key, ("assistant", "b1"))
    _say(django_store, key, ("user", "v2"), ("assistant", "b2"))
    # Every alternative stays stored, with its position; the store sees the chosen one only.
    assert Message.every.filter(conversation_id=key).count() == 7
    assert _chosen(django_store, key) == ["u1", "b1", "v2", "b2"]
    branches = conversation_branches(key)
    assert branches == [
        {"point": ids["u1"], "message": _ids(key)["b1"], "index": 2, "count": 2, "error": ""}
    ]

    select_branch(key, ids["u1"], 1, owner=Conversation.objects.get(pk=key).owner_id)
    assert _chosen(django_store, key) == ["u1", "a1", "u2", "a2"]
    select_branch(key, ids["u1"], 2, owner=Conversation.objects.get(pk=key).owner_id)
    # The messages written after the branch came with their alternative.
    assert _chosen(django_store, key) == ["u1", "b1", "v2", "b2"]
    positions = list(Message.every.filter(conversation_id=key).values_list("position", flat=True))
    assert len(set(positions)) == len(positions)
    # Deleting the conversation takes every alternative with it.
    django_store.delete_sync(key)
    assert not Message.every.filter(conversation_id=key).exists()


def test_an_edit_inside_an_alternative_nests_and_each_level_keeps_its_choice(
    django_store, key, user
):
    ids = _ids(key)
    start_alternative(key, Redo("regenerate", ids["u2"]), _run(key))
    _say(django_store, key, ("assistant", "b2"))
    # Edit u2: its point is a1, and the regenerated answers at u2 go with the old u2.
    images = start_alternative(key, Redo("edit", ids["u2"]), _run(key))
    assert images == ()
    assert _chosen(django_store, key) == ["u1", "a1"]
    _say(django_store, key, ("user", "w2"), ("assistant", "c2"))
    points = {entry["point"]: entry for entry in conversation_branches(key)}
    assert set(points) == {ids["a1"]}  # the point at u2 is on the other alternative
    assert points[ids["a1"]]["index"] == 2

    select_branch(key, ids["a1"], 1, owner=user.pk)
    # Back on the old u2, its own choice (the regenerated b2) is as it was left.
    assert _chosen(django_store, key) == ["u1", "a1", "u2", "b2"]
    assert [entry["point"] for entry in conversation_branches(key)] == [ids["a1"], ids["u2"]]


def test_an_edit_of_the_first_message_branches_at_the_start(django_store, key, user):
    ids = _ids(key)
    start_alternative(key, Redo("edit", ids["u1"]), _run(key))
    assert _chosen(django_store, key) == []
    _say(django_store, key, ("user", "x1"), ("assistant", "y1"))
    assert conversation_branches(key)[0]["point"] == ""
    select_branch(key, "", 1, owner=user.pk)
    assert _chosen(django_store, key) == ["u1", "a1", "u2", "a2"]


def test_refusals_name_what_cannot_branch(key, user, other_user):
    ids = _ids(key)
    with pytest.raises(NotBranchable):
        start_alternative(key, Redo("edit", ids["a1"]), _run(key))
    with pytest.raises(NoSuchBranch):
        start_alternative(key, Redo("regenerate", "nope"), _run(key))
    start_alternative(key, Redo("regenerate", ids["a2"]), _run(key))
    with pytest.raises(NoSuchBranch):
        select_branch(key, ids["u2"], 1, owner=other_user.pk)
    with pytest.raises(NoSuchBranch):
        select_branch(key, ids["u2"], 3, owner=user.pk)
    Run.objects.create(conversation_id=key, status="running")
    with pytest.raises(BranchBusy):
        select_branch(key, ids["u2"], 1, owner=user.pk)


def test_once_compaction_folds_the_point_it_is_no_longer_offered(django_store, key, user):
    ids = _ids(key)
    start_alternative(key, Redo("regenerate", ids["a1"]), _run(key))
    _say(django_store, key, ("assistant", "b1"), ("user", "v2"), ("assistant", "b2"))
    snapshot = django_store.get_sync(key)
    assert snapshot is not None
    live = snapshot["messages"]
    # Fold the first turn (the point and its chosen answer) into a section, as compaction does.
    snapshot = {
        "id": key,
        "sections": [{"id": "s1", "summary": "u1 asked, b1 answered", "messages": live[:2]}],
        "messages": live[2:],
        "summary": "u1 asked, b1 answered",
    }
    django_store.set_sync(snapshot)  # type: ignore[arg-type]
    assert conversation_branches(key) == []
    with pytest.raises(NoSuchBranch):
        select_branch(key, ids["u1"], 1, owner=user.pk)
    # The other alternative stays stored, out of sight.
    assert Message.every.filter(conversation_id=key, hidden=True).count() == 3
    assert _chosen(django_store, key) == ["v2", "b2"]


def test_search_export_and_forks_see_the_chosen_branch_only(django_store, key, user):
    Conversation.objects.filter(pk=key).update(title="trip")
    ids = _ids(key)
    start_alternative(key, Redo("regenerate", ids["a2"]), _run(key))
    _say(django_store, key, ("assistant", "b2"))
    found = list_conversations(user=user, query="a2")
    assert not found.exists()
    assert list_conversations(user=user, query="b2").exists()
    exported = [
        r["content"] for r in export_records(user=user, conversation_id=key) if "content" in r
    ]
    assert exported == ["u1", "a1", "u2", "b2"]
    with pytest.raises(LookupError):
        fork_conversation(user=user, conversation_id=key, message_id=ids["a2"])
    fork = fork_conversation(user=user, conversation_id=key, message_id=_ids(key)["b2"])
    assert _chosen(django_store, str(fork.pk)) == ["u1", "a1", "u2", "b2"]
    assert Message.every.filter(conversation=fork).count() == 4
