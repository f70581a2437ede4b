"""Plans, then applies, the few statements that bring a conversation's rows in line with a
kit snapshot: the write half of ``DjangoConversationStore.set``.

The plan reads only the rows that can change (the live tail and the sections being dropped or
rewritten): a known section whose originals are listed unchanged, checked against its stored
``fingerprint``, is trusted and never read. The statements then run in an order that keeps
each one exact: deletes over the rows as read, new sections, re-parents (one ranged ``UPDATE``
per unbroken run of rows), renumbering, dropped sections, inserts.

The reasoning of an answer lives beside the kit's message, never in it (the model never reads
it back): ``write_thinking`` sets it on rows the snapshot wrote, ``stored_thinking`` reads it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from orkestrel.core.conversation_store import ConversationSnapshot
from orkestrel.core.documents import documents_text
from orkestrel.core.messages import MessageInput, create_message, message_to_dict
from orkestrel.db import ascending, chunked
from orkestrel.statements import Query, field_of, insert, prep, update

from .models import Conversation, Message, Section

__all__ = [
    "FIXED_INSERTS",
    "Group",
    "Stored",
    "Thought",
    "Writer",
    "fingerprint",
    "layout",
    "new_message_row",
    "rewrite_messages",
    "stored_thinking",
    "touch",
    "write_thinking",
]


@dataclass(frozen=True, slots=True)
class Stored:
    """The stored conversation as a save sees it: rollup, highest position, message count
    (``None`` when the save did not need it)."""

    summary: str | None
    top: int
    total: int | None


@dataclass(frozen=True, slots=True)
class Thought:
    """An answer's reasoning as it streamed, and how long it took (``None``: unknown)."""

    text: str
    ms: int | None = None


@dataclass(slots=True)
class Group:
    """One section of the snapshot (``key``: its id) or the live tail (``key`` ``None``)."""

    key: str | None
    summary: str
    messages: list[Mapping[str, Any]]


# {message_id: (pk, section pk or None, position)}
_Rows = dict[str, tuple[int, int | None, int]]


def layout(snapshot: ConversationSnapshot) -> list[Group]:
    """The snapshot as groups in order (sections, then the tail); rejects repeated ids."""
    groups = [
        Group(section["id"], section["summary"], list(section["messages"]))
        for section in snapshot["sections"]
    ]
    if len({group.key for group in groups}) != len(groups):
        raise ValueError("snapshot sections must have unique ids")
    groups.append(Group(None, "", list(snapshot["messages"])))
    seen: set[str] = set()
    for group in groups:
        for message in group.messages:
            if message["id"] in seen:
                raise ValueError(f"message id {message['id']!r} appears twice in the snapshot")
            seen.add(message["id"])
    return groups


def fingerprint(messages: Sequence[Mapping[str, Any]]) -> str:
    """The digest ``Section.fingerprint`` holds: of a section's original message ids, in order."""
    # Length-prefixed, so no two id lists spell the same text.
    text = "".join([f"{len(message['id'])}:{message['id']}" for message in messages])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def touch(key: uuid.UUID, **values: Any) -> None:
    """Move the conversation's ``updated`` to now (lists order by it), with ``values``."""
    update(Conversation, {"id": key}, {**values, "updated": timezone.now()})


# The live tail's rows, in fixed SQL: a turn's save reads them (``_rows`` of the tail).
_TAIL_ROWS = Query(
    lambda n: (
        f"SELECT {n.columns(Message, ('message_id', 'id', 'section', 'position'))} "
        f"FROM {n.table(Message)} WHERE {n.column(Message, 'conversation')} = %s "
        f"AND {n.column(Message, 'hidden')} = %s AND {n.column(Message, 'section')} IS NULL"
    )
)
_SECTION_FIELDS = ("id", "section_id", "position", "summary", "fingerprint")
_SECTIONS = Query(
    lambda n: (
        f"SELECT {n.columns(Section, _SECTION_FIELDS)} FROM {n.table(Section)} "
        f"WHERE {n.column(Section, 'conversation')} = %s"
    )
)
# Up to this many new messages are inserted in fixed SQL: a turn's few rows cost less that
# way than ``bulk_create``'s compiling.
FIXED_INSERTS = 8


def _stored_sections(key: uuid.UUID) -> dict[str, Section]:
    """The conversation's sections by id (the columns a save compares)."""
    attnames = [field_of(Section, name).attname for name in _SECTION_FIELDS]
    return {
        section.section_id: section
        for section in (
            Section.from_db(connection.alias, attnames, row)
            for row in _SECTIONS.rows([prep(Section, "conversation", key)])
        )
    }


def _tail_rows(key: uuid.UUID) -> _Rows:
    rows = _TAIL_ROWS.rows([prep(Message, "conversation", key), False])
    return {message_id: (pk, section, position) for message_id, pk, section, position in rows}


def _rows(key: uuid.UUID, where: Q) -> _Rows:
    rows = (
        Message.objects.filter(where, conversation_id=key)
        .order_by()
        .values_list("message_id", "pk", "section_id", "position")
    )
    return {message_id: (pk, section, position) for message_id, pk, section, position in rows}


# Each parent's rows as sorted ``(position, pk)``: the tail under ``None``, a section by its pk.
_Parents = dict[int | None, list[tuple[int, int]]]


def _parents(rows: _Rows, arrivals: Mapping[int | None, set[int]]) -> _Parents:
    """Each parent's rows, plus the rows a re-parent moves into it (``arrivals``).

    Listing arrivals under both parents keeps a range on either from reaching them, whichever
    statement runs first.
    """
    positions = {pk: position for pk, _, position in rows.values()}
    parents: _Parents = {}
    for pk, parent, position in rows.values():
        parents.setdefault(parent, []).append((position, pk))
    for parent, pks in arrivals.items():
        parents.setdefault(parent, []).extend((positions[pk], pk) for pk in pks)
    for entries in parents.values():
        entries.sort()
    return parents


def _spans(parents: _Parents, chosen: set[int], target: object = ...) -> Iterator[Q]:
    """Filters that together match exactly the ``chosen`` rows: one per unbroken run.

    ``parents`` lists every row of each parent it mentions, so a run of a parent's rows in
    position order is matched by a position range: folding a thousand tail messages into a
    section is one ``UPDATE``, not a thousand-item ``IN`` list. A re-parent skips its
    ``target``, where the chosen rows are only listed as arrivals.
    """
    if not chosen:
        return
    for parent, entries in parents.items():
        if parent == target:
            continue
        owner = Q(section__isnull=True) if parent is None else Q(section_id=parent)
        # Another writer may have left equal positions: then a range could over-match.
        ties = len({position for position, _ in entries}) != len(entries)
        run: list[tuple[int, int]] = []
        for entry in [*entries, None]:
            if entry is not None and entry[1] in chosen:
                run.append(entry)
                continue
            if not run:
                continue
            if ties:
                for chunk in chunked([pk for _, pk in run]):
                    yield Q(pk__in=chunk)
            else:
                yield owner & Q(position__gte=run[0][0], position__lte=run[-1][0])
            run = []


class Writer:
    """Plans, then applies, the few statements that bring one conversation's rows in line."""

    def __init__(self, key: uuid.UUID, groups: list[Group], stored: Stored) -> None:
        self.key = key
        self.groups = groups
        self.stored = stored
        self.top = stored.top
        self.sections: dict[str, Section] = {}
        self.new_sections: list[Section] = []
        self.changed_sections: list[Section] = []
        self.dropped: list[int] = []
        self.inserts: list[Message] = []
        self.rows: _Rows = {}
        self.moves: dict[str | None, set[int]] = {}
        self.renumbered: list[tuple[int, str | None, int]] = []
        self.deletes: set[int] = set()

    def write(self, summary: str | None) -> None:
        self._plan()
        changed = bool(
            self.new_sections
            or self.changed_sections
            or self.dropped
            or self.inserts
            or self.moves
            or self.renumbered
            or self.deletes
        )
        values: dict[str, Any] = {"summary": summary} if summary != self.stored.summary else {}
        if changed or values:
            touch(self.key, **values)
        self._apply()

    def _plan(self) -> None:
        stored = _stored_sections(self.key)
        prints = {group.key: fingerprint(group.messages) for group in self.groups[:-1]}
        # A known section whose originals are listed unchanged is trusted and not read: the
        # tail and the other sections (dropped ones: a merge re-parents their originals) are.
        trusted = {key for key, row in stored.items() if prints.get(key) == row.fingerprint}
        self.dropped = [row.pk for key, row in stored.items() if key not in prints]
        unread = [row.pk for key, row in stored.items() if key not in trusted]
        rows = (
            _rows(self.key, Q(section__isnull=True) | Q(section_id__in=unread))
            if unread
            else _tail_rows(self.key)
        )
        listed = sum(len(group.messages) for group in self.groups if group.key in trusted)
        if self.stored.total is None or self.stored.total - len(rows) != listed:
            # Rows changed under a trusted section (another writer): read and compare them all.
            rows, trusted = _rows(self.key, Q()), set()
        self.rows = rows
        self._plan_sections(stored, prints)
        placed: set[str] = set()
        for group in self.groups:
            if group.key not in trusted:
                self._place(group, rows, placed)
        dropped = set(self.dropped)
        self.deletes = {
            pk
            for message_id, (pk, parent, _) in rows.items()
            if message_id not in placed and parent not in dropped
        }

    def _plan_sections(self, stored: dict[str, Section], prints: dict[str | None, str]) -> None:
        for index, group in enumerate(self.groups[:-1]):
            assert group.key is not None
            wanted = {"position": index, "summary": group.summary, "fingerprint": prints[group.key]}
            section = stored.get(group.key)
            if section is None:
                section = Section(conversation_id=self.key, section_id=group.key, **wanted)
                self.new_sections.append(section)
            elif any(getattr(section, name) != value for name, value in wanted.items()):
                for name, value in wanted.items():
                    setattr(section, name, value)
                self.changed_sections.append(section)
            self.sections[group.key] = section

    def _place(self, group: Group, rows: _Rows, placed: set[str]) -> None:
        """Plan one group's inserts, re-parents and, when its order broke, new positions."""
        section = self.sections[group.key] if group.key is not None else None
        known = [rows.get(message["id"]) for message in group.messages]
        keep_positions = ascending([row[2] if row else None for row in known])
        for message, row in zip(group.messages, known, strict=True):
            placed.add(message["id"])
            if row is None:
                self.inserts.append(new_message_row(self.key, section, self._next(), message))
                continue
            pk, parent, _ = row
            if not keep_positions:
                self.renumbered.append((pk, group.key, self._next()))
            elif section is None and parent is not None:
                self.moves.setdefault(None, set()).add(pk)
            elif section is not None and (section.pk is None or parent != section.pk):
                self.moves.setdefault(group.key, set()).add(pk)

    def _next(self) -> int:
        self.top += 1
        return self.top

    def _section_pk(self, key: str | None) -> int | None:
        return None if key is None else self.sections[key].pk

    def _apply(self) -> None:
        """Run the plan, each step over a state the earlier ones left predictable.

        Deletes first (the rows are as read); then new sections (re-parents need their pks),
        re-parents, renumbering, dropped sections (after their originals left), inserts.
        """
        before = _parents(self.rows, {})
        for where in _spans(before, self.deletes):
            Message.objects.filter(where, conversation_id=self.key).delete()
        if self.new_sections:
            Section.objects.bulk_create(self.new_sections)
        if self.changed_sections:
            Section.objects.bulk_update(
                self.changed_sections, ["position", "summary", "fingerprint"]
            )
        if self.moves:
            arrivals = {self._section_pk(key): pks for key, pks in self.moves.items()}
            parents = _parents(self.rows, arrivals)
            for target, pks in arrivals.items():
                for where in _spans(parents, pks, target):
                    Message.objects.filter(where, conversation_id=self.key).update(
                        section_id=target
                    )
        if self.renumbered:
            Message.objects.bulk_update(
                [
                    Message(pk=pk, section_id=self._section_pk(key), position=position)
                    for pk, key, position in self.renumbered
                ],
                ["section", "position"],
            )
        if self.dropped:
            # Whatever originals were not re-parented go with them (CASCADE).
            Section.objects.filter(pk__in=self.dropped).delete()
        if self.inserts:
            for message in self.inserts:
                # Their section may have been created just above: take its fresh pk.
                message.section_id = message.section.pk if message.section else None
            if len(self.inserts) <= FIXED_INSERTS:
                insert(*self.inserts)
            else:
                Message.objects.bulk_create(self.inserts)


def new_message_row(
    key: uuid.UUID, section: Section | None, position: int, value: MessageInput
) -> Message:
    """An unsaved row for a kit message (or its dict), normalized as ``message_to_dict`` emits."""
    message = create_message(value)
    data = message_to_dict(message)
    return Message(
        conversation_id=key,
        section=section,
        message_id=data["id"],
        position=position,
        role=data["role"],
        content=data["content"],
        calls=data.get("calls"),
        images=data.get("images"),
        tool_call_id=data.get("tool_call_id") or "",
        outcome=data.get("outcome"),
        documents=data.get("documents"),
        document_text=documents_text(message.documents),
    )


def rewrite_messages(key: uuid.UUID | str, messages: Sequence[MessageInput]) -> None:
    """Store the new content (and outcome) of messages already stored under their ids: a held
    call's placeholder result once the call is decided. ``Writer`` never rewrites a stored
    message: it compares ids and places, not contents."""
    for value in messages:
        data = message_to_dict(create_message(value))
        Message.objects.filter(conversation_id=key, message_id=data["id"]).update(
            content=data["content"], outcome=data.get("outcome")
        )


def write_thinking(key: uuid.UUID | str, thoughts: Mapping[str, Thought]) -> None:
    """Set the reasoning of the conversation's messages ``thoughts`` names (by message id); an
    id not stored (yet) is skipped. One read and one ``UPDATE`` per chunk of messages."""
    for ids in chunked(list(thoughts)):
        rows = list(
            Message.objects.filter(conversation_id=key, message_id__in=ids).only("message_id")
        )
        for row in rows:
            thought = thoughts[row.message_id]
            row.thinking, row.thinking_ms = thought.text, thought.ms
        if rows:
            Message.objects.bulk_update(rows, ["thinking", "thinking_ms"])


def stored_thinking(key: uuid.UUID | str) -> dict[str, Thought]:
    """The reasoning of every message of the conversation that has some, by message id."""
    rows = (
        Message.objects.filter(conversation_id=key)
        .exclude(thinking="")
        .order_by()
        .values_list("message_id", "thinking", "thinking_ms")
    )
    return {message_id: Thought(text, ms) for message_id, text, ms in rows}
