"""The durable conversation seam: the snapshot payload, its guards, and the in-memory store.

A ``ConversationSnapshot`` is plain JSON: ``{"id", "summary"?, "sections", "messages"}``. The
guards narrow untrusted storage reads to it and never raise; the store persists it keyed by its
own ``id``, with no TTL (a conversation lives until an explicit ``delete``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, runtime_checkable

from .messages import Message, is_message, message_to_dict

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # ``typing.TypeIs`` from Python 3.13

__all__ = [
    "ConversationSnapshot",
    "ConversationStore",
    "MemoryConversationStore",
    "SectionSnapshot",
    "create_memory_conversation_store",
    "is_conversation_snapshot",
    "is_section",
]


class SectionSnapshot(TypedDict):
    """One compacted section as plain JSON: its summary and the originals it folded."""

    id: str
    summary: str
    messages: list[dict[str, Any]]


class ConversationSnapshot(TypedDict):
    """A conversation as plain JSON; ``summary`` is absent until the first compaction."""

    id: str
    summary: NotRequired[str]
    sections: list[SectionSnapshot]
    messages: list[dict[str, Any]]


# Defined here, beside its snapshot and guard, so the guard needs no import back from
# ``conversation`` (which re-exports it as part of its public surface).
@dataclass(frozen=True, slots=True)
class Section:
    """A slice of folded messages digested into ``summary``; ``messages`` are the originals."""

    id: str
    summary: str
    messages: tuple[Message, ...]

    def to_dict(self) -> SectionSnapshot:
        return {
            "id": self.id,
            "summary": self.summary,
            "messages": [_message_json(message) for message in self.messages],
        }


def _message_json(message: Message) -> dict[str, Any]:
    data = message_to_dict(message)
    # Tool-call arguments may nest mutable values: never share them with a snapshot reader.
    return copy.deepcopy(data) if message.calls else data


def _is_message_list(value: object) -> bool:
    return isinstance(value, list | tuple) and all(is_message(item) for item in value)


def is_section(value: object) -> TypeIs[Section | SectionSnapshot]:
    """Whether ``value`` is structurally a section: string ``id`` / ``summary``, valid messages.

    Accepts a ``Section`` or its plain-dict form; total (never raises).
    """
    try:
        if not isinstance(value, Mapping):
            if not isinstance(value, Section):
                return False
            value = value.to_dict()
        return (
            isinstance(value.get("id"), str)
            and isinstance(value.get("summary"), str)
            and _is_message_list(value.get("messages"))
        )
    except Exception:  # noqa: BLE001 - a guard is total
        return False


def is_conversation_snapshot(value: object) -> TypeIs[ConversationSnapshot]:
    """Whether ``value`` is a ``ConversationSnapshot``; fails closed on any malformed element."""
    try:
        if not isinstance(value, Mapping):
            return False
        if not isinstance(value.get("id"), str):
            return False
        if "summary" in value and not isinstance(value["summary"], str):
            return False
        sections = value.get("sections")
        if not isinstance(sections, list | tuple) or not all(is_section(s) for s in sections):
            return False
        return _is_message_list(value.get("messages"))
    except Exception:  # noqa: BLE001 - a guard is total
        return False


@runtime_checkable
class ConversationStore(Protocol):
    """Async persistence for conversation snapshots, keyed by each snapshot's own ``id``."""

    async def get(self, id: str) -> ConversationSnapshot | None:
        """The stored snapshot, or ``None`` when absent."""
        ...

    async def set(self, snapshot: ConversationSnapshot) -> None:
        """Upsert ``snapshot`` under ``snapshot["id"]``."""
        ...

    async def delete(self, id: str) -> None:
        """Drop one snapshot; an absent id is a no-op."""
        ...


class MemoryConversationStore:
    """A process-lifetime dict of snapshots.

    Snapshots are deep-copied in and out, so neither the caller nor a later reader can mutate
    what is stored.
    """

    __slots__ = ("_snapshots",)

    def __init__(self) -> None:
        self._snapshots: dict[str, ConversationSnapshot] = {}

    async def get(self, id: str) -> ConversationSnapshot | None:
        """The stored snapshot (a private copy), or ``None``."""
        stored = self._snapshots.get(id)
        return copy.deepcopy(stored) if stored is not None else None

    async def set(self, snapshot: ConversationSnapshot) -> None:
        """Upsert ``snapshot`` under its own id; raises ``ValueError`` for a malformed one."""
        if not is_conversation_snapshot(snapshot):
            raise ValueError("snapshot must be a valid conversation snapshot")
        stored = copy.deepcopy(snapshot)
        self._snapshots[stored["id"]] = stored

    async def delete(self, id: str) -> None:
        """Drop the snapshot stored under ``id``; an absent id is a no-op."""
        self._snapshots.pop(id, None)


def create_memory_conversation_store() -> MemoryConversationStore:
    """Create an empty in-memory conversation store."""
    return MemoryConversationStore()
