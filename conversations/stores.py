"""The Django-backed ``ConversationStore``: the kit's snapshots over normalized rows.

``get`` rebuilds a snapshot in three queries whatever the history's length. ``set`` writes only
the difference, in one transaction (planned by ``writer.Writer``): new message ids inserted,
vanished ones deleted, the messages a compaction folded re-parented into their new section,
the rollup updated. A turn costs the same few queries at ten messages or ten thousand. The
``*_sync`` twins serve sync callers (views, management commands, tests).

Contract (as the kit's): a message is immutable, so a stored message id always names the same
message; a snapshot that reuses an id for different content keeps the stored content.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from orkestrel.core.conversation_store import ConversationSnapshot, is_conversation_snapshot
from orkestrel.core.messages import MessageInput
from orkestrel.db import in_thread, owner_pk, parse_id
from orkestrel.statements import Names, Query, field_of, insert, prep
from workspaces.models import Workspace

from .models import Conversation, Message, Section, message_dict
from .writer import FIXED_INSERTS, Stored, Writer, layout, new_message_row, touch

__all__ = ["DjangoConversationStore"]

# A message row's columns: its section, then ``message_dict``'s arguments.
_MESSAGE_COLUMNS = (
    "section_id",
    "message_id",
    "role",
    "content",
    "calls",
    "images",
    "tool_call_id",
    "outcome",
    "documents",
)


class DjangoConversationStore:
    """A ``ConversationStore`` over the ``conversations`` models.

    Args:
        owner: The user (or user id) whose conversations this store sees and creates. Without
            one the store sees every conversation but cannot create one (``set`` of an unknown
            id raises ``ValueError``).
    """

    def __init__(self, owner: AbstractBaseUser | int | None = None) -> None:
        self._owner = owner_pk(owner)

    def __repr__(self) -> str:
        return f"DjangoConversationStore(owner={self._owner!r})"

    # -- the kit's async contract ----------------------------------------------------------

    async def get(self, id: str) -> ConversationSnapshot | None:
        """The stored snapshot, or ``None`` (unknown or malformed id)."""
        return await in_thread(self.get_sync)(id)

    async def set(self, snapshot: ConversationSnapshot) -> None:
        """Upsert ``snapshot`` under ``snapshot["id"]`` (see ``set_sync``)."""
        await in_thread(self.set_sync)(snapshot)

    async def delete(self, id: str) -> None:
        """Drop the conversation ``id`` with everything under it; an absent id is a no-op."""
        await in_thread(self.delete_sync)(id)

    # -- sync twins ------------------------------------------------------------------------

    def _conversations(self) -> QuerySet[Conversation]:
        queryset = Conversation.objects.all()
        return queryset if self._owner is None else queryset.filter(owner_id=self._owner)

    def get_sync(self, id: str) -> ConversationSnapshot | None:
        """Rebuild the snapshot in three queries; ``None`` for an unknown or malformed id."""
        key = parse_id(id)
        if key is None:
            return None
        found = self._conversations().filter(pk=key).values_list("summary", flat=True)[:1]
        summary = list(found)
        if not summary:
            return None
        return _snapshot(key, summary[0])

    def set_sync(self, snapshot: ConversationSnapshot) -> None:
        """Write ``snapshot``, changing only what differs from the stored rows.

        Raises:
            ValueError: ``snapshot`` is malformed, its id is not a canonical UUID string, a
                message or section id repeats, or the conversation is new and the store has
                no owner.
            PermissionError: the conversation belongs to another owner than the store's.
        """
        if not is_conversation_snapshot(snapshot):
            raise ValueError("snapshot must be a valid conversation snapshot")
        key = parse_id(snapshot["id"])
        if key is None:
            raise ValueError(
                f"conversation id must be a canonical UUID string, not {snapshot['id']!r}"
            )
        groups = layout(snapshot)
        with transaction.atomic():
            Writer(key, groups, self._claim(key)).write(snapshot.get("summary"))

    def append_sync(self, id: str, message: MessageInput) -> ConversationSnapshot:
        """Add one new message at the end of the live tail and return the stored snapshot with
        it: ``set`` of the stored snapshot plus ``message``, without re-checking the stored
        messages (a run's start). The read happens under the write's lock, so the snapshot is
        exactly what is stored.

        Raises:
            ValueError: ``id`` is not a canonical UUID string, the message is malformed or its
                id is stored already, or the conversation is new and the store has no owner.
            PermissionError: the conversation belongs to another owner than the store's.
        """
        key = parse_id(id)
        if key is None:
            raise ValueError(f"conversation id must be a canonical UUID string, not {id!r}")
        row = new_message_row(key, None, 0, message)
        taken = ValueError(f"message id {row.message_id!r} is stored already")
        try:
            with transaction.atomic():
                stored = self._claim(key, count=False)
                snapshot = _snapshot(key, stored.summary)
                if any(m["id"] == row.message_id for m in _every_message(snapshot)):
                    raise taken
                row.position = stored.top + 1
                insert(row)
                touch(key)
        except IntegrityError as error:
            # A writer that bypassed the lock stored the id meanwhile (the unique constraint).
            raise taken from error
        snapshot["messages"].append(
            message_dict(
                row.message_id,
                row.role,
                row.content,
                row.calls,
                row.images,
                row.tool_call_id,
                row.outcome,
                row.documents,
            )
        )
        return snapshot

    def create_sync(
        self,
        id: str,
        messages: Sequence[MessageInput],
        *,
        profile_id: int | None,
        origin: str,
        title: str = "",
    ) -> tuple[ConversationSnapshot, str]:
        """Create the conversation ``id`` with its workspace and ``messages`` (the history a
        request brought), in three inserts; the stored snapshot and the workspace's id.

        Raises:
            ValueError: the id is not a canonical UUID string, the store has no owner, or a
                message is malformed.
            IntegrityError: the id is taken.
        """
        key = parse_id(id)
        if key is None:
            raise ValueError(f"conversation id must be a canonical UUID string, not {id!r}")
        if self._owner is None:
            raise ValueError("creating a conversation needs a store with an owner")
        rows = [new_message_row(key, None, index, m) for index, m in enumerate(messages)]
        with transaction.atomic():
            # Fixed SQL (``orkestrel.statements``): every OpenAI request creates one.
            workspace = Workspace(owner_id=self._owner, name=title or "Workspace")
            insert(workspace)
            insert(
                Conversation(
                    id=key,
                    owner_id=self._owner,
                    profile_id=profile_id,
                    origin=origin,
                    title=title,
                    workspace=workspace,
                )
            )
            if len(rows) <= FIXED_INSERTS:
                insert(*rows)
            else:
                Message.objects.bulk_create(rows)
        snapshot: ConversationSnapshot = {
            "id": str(key),
            "sections": [],
            "messages": [
                message_dict(
                    row.message_id,
                    row.role,
                    row.content,
                    row.calls,
                    row.images,
                    row.tool_call_id,
                    row.outcome,
                    row.documents,
                )
                for row in rows
            ],
        }
        return snapshot, str(workspace.pk)

    def delete_sync(self, id: str) -> None:
        """Drop the conversation ``id`` (sections, messages, runs cascade); absent is a no-op."""
        key = parse_id(id)
        if key is not None:
            self._conversations().filter(pk=key).delete()

    def _claim(self, key: uuid.UUID, *, count: bool = True) -> Stored:
        """Lock (PostgreSQL) or create the conversation row; what the save needs to know of it.

        ``count=False`` skips counting the stored messages (``Stored.total`` is then ``None``).
        """
        row = _locked(key, count=count)
        if row is None:
            if self._owner is None:
                raise ValueError("creating a conversation needs a store with an owner")
            try:
                with transaction.atomic():
                    Conversation.objects.create(id=key, owner_id=self._owner)
                return Stored(summary=None, top=-1, total=0 if count else None)
            except IntegrityError:
                # A concurrent first save created it: wait for its lock and carry on.
                row = _locked(key, count=count)
                if row is None:
                    raise
        owner, summary, top, total = row
        if self._owner is not None and owner != self._owner:
            raise PermissionError(f"conversation {str(key)!r} belongs to another user")
        return Stored(
            summary=summary,
            top=-1 if top is None else top,
            total=(total or 0) if count else None,
        )


_SECTIONS = Query(
    lambda n: (
        f"SELECT {n.columns(Section, ('id', 'section_id', 'summary'))} FROM {n.table(Section)} "
        f"WHERE {n.column(Section, 'conversation')} = %s ORDER BY {n.column(Section, 'position')}"
    )
)
# The chosen branch's messages (``Message.objects``), in order.
_MESSAGES = Query(
    lambda n: (
        f"SELECT {n.columns(Message, _MESSAGE_COLUMNS)} FROM {n.table(Message)} "
        f"WHERE {n.column(Message, 'conversation')} = %s AND {n.column(Message, 'hidden')} = %s "
        f"ORDER BY {n.column(Message, 'position')}, {n.column(Message, 'id')}"
    ),
    [field_of(Message, name) for name in _MESSAGE_COLUMNS],
)


def _snapshot(key: uuid.UUID, summary: str | None) -> ConversationSnapshot:
    """The stored sections and messages of ``key`` as a snapshot (two queries)."""
    conversation = prep(Message, "conversation", key)
    sections = _SECTIONS.rows([conversation])
    originals: dict[int, list[dict[str, Any]]] = {pk: [] for pk, _, _ in sections}
    tail: list[dict[str, Any]] = []
    for section, *columns in _MESSAGES.rows([conversation, False]):
        (tail if section is None else originals[section]).append(message_dict(*columns))
    snapshot: ConversationSnapshot = {
        "id": str(key),
        "sections": [
            {"id": section_id, "summary": text, "messages": originals[pk]}
            for pk, section_id, text in sections
        ],
        "messages": tail,
    }
    if summary is not None:
        snapshot["summary"] = summary
    return snapshot


def _every_message(snapshot: ConversationSnapshot) -> Iterator[Mapping[str, Any]]:
    for section in snapshot["sections"]:
        yield from section["messages"]
    yield from snapshot["messages"]


def _locked_sql(n: Names, count: bool) -> str:
    c, m = "c", "m"
    of = f"{n.column(Message, 'conversation', m)} = {n.column(Conversation, 'id', c)}"
    # The top over every row, the messages of alternatives not chosen too: a position names
    # one message whichever branch is chosen later. The count is of the chosen ones.
    top = f"(SELECT MAX({n.column(Message, 'position', m)}) FROM {n.table(Message)} {m} WHERE {of})"
    total = (
        f", (SELECT COUNT(*) FROM {n.table(Message)} {m} WHERE {of} "
        f"AND {n.column(Message, 'hidden', m)} = %s)"
        if count
        else ""
    )
    return (
        f"SELECT {n.columns(Conversation, ('owner', 'summary'), c)}, {top}{total} "
        f"FROM {n.table(Conversation)} {c} WHERE {n.column(Conversation, 'id', c)} = %s"
        f"{n.for_update}"
    )


_LOCKED = Query(lambda n: _locked_sql(n, count=False))
_LOCKED_COUNTED = Query(lambda n: _locked_sql(n, count=True))


def _locked(
    key: uuid.UUID, *, count: bool = True
) -> tuple[int, str | None, int | None, int | None] | None:
    """The conversation's owner, rollup, highest position and (if asked) message count, with
    the row locked."""
    conversation = prep(Conversation, "id", key)
    found = _LOCKED_COUNTED.rows([False, conversation]) if count else _LOCKED.rows([conversation])
    if not found:
        return None
    owner, summary, top, *total = found[0]
    return owner, summary, top, total[0] if total else None
