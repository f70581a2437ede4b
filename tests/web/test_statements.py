"""Fixed-SQL statements (``orkestrel.statements``) return and write exactly what the ORM does."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from conversations.models import Conversation, Message, Run
from orkestrel.statements import Names, Query, insert, prep, update

pytestmark = pytest.mark.django_db

_COLUMNS = ("message_id", "role", "calls", "outcome", "hidden", "created", "thinking_ms")
_ROWS = Query(
    lambda n: (
        f"SELECT {n.columns(Message, _COLUMNS)} FROM {n.table(Message)} "
        f"WHERE {n.column(Message, 'conversation')} = %s ORDER BY {n.column(Message, 'position')}"
    ),
    [Message._meta.get_field(name) for name in _COLUMNS],
)


@pytest.fixture
def conversation() -> Conversation:
    owner = get_user_model().objects.create_user("statements")
    return Conversation.objects.create(owner=owner, title="t")


def _message(conversation: Conversation, position: int, **fields) -> Message:
    values = {"message_id": f"m{position}", "role": "assistant", "content": f"text {position}"}
    return Message(conversation=conversation, position=position, **{**values, **fields})


def test_a_query_converts_each_column_as_the_orm_does(conversation) -> None:
    Message.objects.create(
        conversation=conversation,
        message_id="a",
        position=0,
        role="assistant",
        calls=[{"id": "c", "name": "read", "arguments": {"path": "x"}}],
        outcome={"kind": "value"},
        hidden=True,
        thinking_ms=12,
    )
    Message.objects.create(conversation=conversation, message_id="b", position=1, role="user")

    fixed = _ROWS.rows([prep(Conversation, "id", conversation.id)])

    orm = list(Message.every.filter(conversation=conversation).values_list(*_COLUMNS))
    assert fixed == orm
    assert fixed[0][2][0]["arguments"] == {"path": "x"} and fixed[0][4] is True
    assert fixed[1][3] is None and fixed[1][4] is False


def test_an_insert_of_several_rows_sets_their_keys_in_order_and_the_fields_defaults(
    conversation,
) -> None:
    rows = [_message(conversation, 0), _message(conversation, 1, calls=[])]
    before = timezone.now()

    insert(*rows)

    stored = {m.pk: m for m in Message.every.all()}
    assert [stored[row.pk].message_id for row in rows] == ["m0", "m1"]
    assert stored[rows[1].pk].calls == [] and stored[rows[0].pk].calls is None
    assert all(stored[row.pk].created >= before for row in rows)  # auto_now_add, as save()
    assert not rows[0]._state.adding


def test_an_insert_refused_by_a_constraint_raises_djangos_integrity_error(conversation) -> None:
    insert(_message(conversation, 0))

    with pytest.raises(IntegrityError), transaction.atomic():
        insert(_message(conversation, 1, message_id="m0"))
    assert Message.every.count() == 1


def test_an_insert_keeps_a_given_uuid_key(conversation) -> None:
    owner = conversation.owner
    key = uuid.uuid4()

    insert(Conversation(id=key, owner=owner, title="mine"))

    assert Conversation.objects.get(id=key).title == "mine"


def test_an_update_changes_only_the_matching_rows_and_counts_them(conversation) -> None:
    first = Run.objects.create(conversation=conversation, status="done")
    other = Run.objects.create(conversation=conversation, status="done")
    finished = timezone.now() + timedelta(seconds=1)

    changed = update(
        Run,
        {"id": first.pk},
        {"events": [{"type": "finish"}], "finished": finished, "cost": Decimal("0.25")},
    )

    assert changed == 1
    first.refresh_from_db()
    other.refresh_from_db()
    assert first.events == [{"type": "finish"}] and first.finished == finished
    assert first.cost == Decimal("0.25")
    assert other.events == [] and other.finished is None
    assert update(Run, {"id": first.pk, "status": "running"}, {"error": "x"}) == 0


def test_names_quote_tables_and_columns_with_an_alias() -> None:
    names = Names(connection)

    assert names.column(Message, "conversation", "m") == 'm."conversation_id"'
    assert names.table(Message) == '"conversations_message"'
    assert names.for_update == (" FOR UPDATE" if connection.vendor == "postgresql" else "")
