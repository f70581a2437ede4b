"""The id-keyed registry of conversations, with an active pointer and an optional store.

Event-free: each conversation owns its own emitter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict, Unpack

from .conversation import (
    Conversation,
    ConversationEvent,
    ConversationSummarizer,
    _check_cap,
    _check_keep,
)
from .conversation_store import ConversationSnapshot, ConversationStore, is_conversation_snapshot
from .emitter import ErrorHandler, Listener

__all__ = ["ConversationManager", "create_conversation_manager"]


class ConversationInput(TypedDict, total=False):
    """What ``ConversationManager.add`` accepts (every field optional; see ``Conversation``)."""

    id: str | None
    summarize: ConversationSummarizer | None
    keep: int | None
    sections: int | None
    on: Mapping[ConversationEvent, Listener | Iterable[Listener]] | None
    error: ErrorHandler | None
    snapshot: ConversationSnapshot | Mapping[str, Any] | None


_INPUT_KEYS = frozenset(ConversationInput.__annotations__)


class ConversationManager:
    """Conversations keyed by id, in insertion order, with an ``active`` one.

    Args:
        summarize: The default summarizer each added conversation gets unless it brings one.
        keep: The default retained tail size, likewise.
        sections: The default sections cap (``>= 1``), likewise.
        store: Backs ``open`` / ``save``; without it they only see the registry.
    """

    def __init__(
        self,
        summarize: ConversationSummarizer | None = None,
        keep: int | None = None,
        sections: int | None = None,
        store: ConversationStore | None = None,
    ) -> None:
        if summarize is not None and not callable(summarize):
            raise TypeError("summarize must be an async callable")
        if store is not None and not isinstance(store, ConversationStore):
            raise TypeError("store must provide async get / set / delete")
        self._summarize = summarize
        self._keep = _check_keep(keep)
        self._sections = _check_cap(sections)
        self._store = store
        self._conversations: dict[str, Conversation] = {}
        self._active: str | None = None

    @property
    def count(self) -> int:
        return len(self._conversations)

    @property
    def store(self) -> ConversationStore | None:
        """The store behind ``open`` / ``save`` (``None`` when there is none)."""
        return self._store

    @property
    def active(self) -> Conversation | None:
        """The active conversation, looked up live (``None`` when there is none)."""
        return self._conversations.get(self._active) if self._active is not None else None

    def conversation(self, id: str) -> Conversation | None:
        """The conversation with ``id``, or ``None``."""
        return self._conversations.get(id)

    def conversations(self) -> tuple[Conversation, ...]:
        """Every conversation, in insertion order."""
        return tuple(self._conversations.values())

    def add(
        self,
        input: ConversationInput | Mapping[str, Any] | Conversation | None = None,
        /,
        **options: Unpack[ConversationInput],
    ) -> Conversation:
        """Create and register a conversation from a mapping or keyword arguments.

        Keys: ``id``, ``summarize``, ``keep``, ``sections``, ``on``, ``error``, ``snapshot``.
        The manager's defaults fill whatever is omitted. An existing id is overwritten (last
        write wins). When no conversation is active (the first ``add``, or after the active one
        was removed) the new one becomes active.
        """
        if isinstance(input, Conversation):
            # Register an existing conversation as it is (the context's ``conversation=``).
            self._conversations[input.id] = input
            if self.active is None:
                self._active = input.id
            return input
        if input is not None and not isinstance(input, Mapping):
            raise TypeError(f"conversation input must be a mapping, not {type(input).__name__}")
        merged: dict[str, Any] = {**(input or {}), **options}
        unknown = set(merged) - _INPUT_KEYS
        if unknown:
            raise TypeError(f"unknown conversation option(s): {', '.join(sorted(unknown))}")
        conversation = Conversation(
            id=merged.get("id"),
            summarize=_pick(merged, "summarize", self._summarize),
            keep=_pick(merged, "keep", self._keep),
            sections=_pick(merged, "sections", self._sections),
            on=merged.get("on"),
            error=merged.get("error"),
            snapshot=merged.get("snapshot"),
        )
        self._conversations[conversation.id] = conversation
        if self.active is None:
            self._active = conversation.id
        return conversation

    def switch(self, id: str) -> Conversation | None:
        """Make the conversation with ``id`` active; an unknown id returns ``None``, no change."""
        conversation = self._conversations.get(id)
        if conversation is not None:
            self._active = id
        return conversation

    async def open(self, id: str) -> Conversation | None:
        """Activate a conversation: from the registry, else hydrated from the store.

        Returns ``None`` when neither has it (a malformed stored snapshot counts as absent).
        """
        conversation = self._conversations.get(id)
        if conversation is None and self._store is not None:
            snapshot = await self._store.get(id)
            # Another open may have registered it while the store answered: reuse that one.
            conversation = self._conversations.get(id)
            if conversation is None and is_conversation_snapshot(snapshot):
                conversation = self.add(snapshot=snapshot)
        if conversation is not None:
            self._active = conversation.id
        return conversation

    async def save(self, id: str) -> bool:
        """Persist a registered conversation's snapshot; ``False`` without a store or the id."""
        conversation = self._conversations.get(id)
        if conversation is None or self._store is None:
            return False
        await self._store.set(conversation.snapshot())
        return True

    def remove(self, id: str | Sequence[str]) -> bool:
        """Remove one conversation by id, or a list; clears ``active`` when it was removed."""
        ids = [id] if isinstance(id, str) else id
        if isinstance(ids, bytes) or not isinstance(ids, Sequence):
            raise TypeError("id must be a conversation id or a list of ids")
        removed = False
        for item in ids:
            if self._conversations.pop(item, None) is not None:
                removed = True
                if item == self._active:
                    self._active = None
        return removed

    def clear(self) -> None:
        """Remove every conversation and clear ``active``."""
        self._conversations.clear()
        self._active = None


def _pick(options: Mapping[str, Any], key: str, default: Any) -> Any:
    value = options.get(key)
    return default if value is None else value


def create_conversation_manager(
    summarize: ConversationSummarizer | None = None,
    keep: int | None = None,
    sections: int | None = None,
    store: ConversationStore | None = None,
) -> ConversationManager:
    """Create a ``ConversationManager`` (see its arguments)."""
    return ConversationManager(summarize, keep, sections, store)
