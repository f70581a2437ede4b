"""A conversation: a live message tail plus its compacted, summarized history.

``compact()`` folds the oldest live messages into a ``Section`` through a provider-agnostic
summarizer, keeping the originals for ``rehydrate`` / ``search``; ``view()`` is the model input
(one recap message per section, then the live tail verbatim).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, overload

from .constants import CONVERSATION_RECAP_PREFIX, DEFAULT_CONVERSATION_KEEP
from .conversation_store import (
    ConversationSnapshot,
    Section,
    _message_json,
    is_conversation_snapshot,
)
from .documents import documents_text
from .emitter import Emitter, ErrorHandler, Listener
from .errors import ConversationError
from .messages import Message, MessageInput, create_message, mint_id

__all__ = [
    "Conversation",
    "ConversationEvent",
    "ConversationSummarizer",
    "Section",
    "create_conversation",
]

ConversationSummarizer = Callable[[Sequence[Message]], Awaitable[str]]
ConversationEvent = Literal["compact", "summary", "rehydrate", "collapse"]


def _check_keep(keep: object) -> int | None:
    if keep is None:
        return None
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise TypeError(f"keep must be an int, not {type(keep).__name__}")
    if keep < 0:
        raise ValueError(f"keep must be >= 0, not {keep!r}")
    return keep


def _check_cap(cap: object) -> int | None:
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, int):
        raise TypeError(f"sections must be an int, not {type(cap).__name__}")
    if cap < 1:
        raise ConversationError("SECTIONS", f"sections cap must be >= 1, not {cap!r}")
    return cap


def _fold_cut(tail: Sequence[Message], keep: int) -> int:
    """How many of the oldest live messages to fold (0: nothing).

    Providers reject a history where an assistant turn's tool calls and the tool results
    answering them are split, so a cut inside such a group moves: FORWARD past the results
    (folding the group whole) unless that would leave no live tail while ``keep`` asked for
    one, then BACK before the assistant turn (which may fold nothing). A cut never leaves the
    tail starting with a ``tool`` message, nor folds a final assistant turn whose calls are still
    awaiting results.
    """
    count = len(tail)
    want = count - keep
    if want <= 0:
        return 0
    unsafe = _unsafe_cuts(tail)
    if not unsafe[want]:
        return want
    forward = next((cut for cut in range(want + 1, count + 1) if not unsafe[cut]), count + 1)
    if forward < count:
        return forward
    return next((cut for cut in range(want - 1, 0, -1) if not unsafe[cut]), 0)


def _unsafe_cuts(tail: Sequence[Message]) -> list[bool]:
    """``unsafe[c]`` is whether folding ``tail[:c]`` would split a call from its results."""
    count = len(tail)
    # Difference array: a tool message at ``j`` answering the caller at ``a`` forbids (a, j].
    delta = [0] * (count + 2)
    owner: dict[str, int] = {}
    group: int | None = None  # the caller whose tool results are still arriving, if any
    for index, message in enumerate(tail):
        if message.role == "assistant" and message.calls:
            owner.update((call.id, index) for call in message.calls)
            group = index
        elif message.role == "tool":
            caller = owner.get(message.tool_call_id) if message.tool_call_id else None
            if caller is None:
                caller = group if group is not None else index - 1
            delta[caller + 1] += 1
            delta[index + 1] -= 1
        else:
            group = None
    unsafe: list[bool] = []
    running = 0
    for cut in range(count + 1):
        running += delta[cut]
        unsafe.append(running > 0)
    if group is not None and _pending(tail, group):
        unsafe[count] = True
    return unsafe


def _pending(tail: Sequence[Message], caller: int) -> bool:
    calls = tail[caller].calls or ()
    results = tail[caller + 1 :]
    answered = {message.tool_call_id for message in results if message.tool_call_id}
    unlinked = sum(1 for message in results if not message.tool_call_id)
    return sum(1 for call in calls if call.id not in answered) > unlinked


def _as_prompt(sections: Iterable[Section]) -> tuple[Message, ...]:
    # The summarizer re-reads the UNframed summaries; the recap label is a view() concern.
    return tuple(Message(section.id, "assistant", section.summary) for section in sections)


class Conversation:
    """A live message tail plus compacted ``sections`` and a rollup ``summary``.

    Args:
        id: The conversation's id (minted when omitted; a ``snapshot``'s id wins).
        summarize: The summarizer seam ``compact()`` needs; without it ``compact()`` raises.
        keep: Recent live messages a compaction retains (default ``DEFAULT_CONVERSATION_KEEP``).
        sections: A cap (``>= 1``) on ``len(sections)``; overflow collapses into one section.
        on: Initial listeners, ``{"compact": fn, ...}``.
        error: Receives ``(error, event)`` when a listener raises.
        snapshot: A ``ConversationSnapshot`` to restore, silently.
    """

    def __init__(
        self,
        id: str | None = None,
        summarize: ConversationSummarizer | None = None,
        keep: int | None = None,
        sections: int | None = None,
        on: Mapping[ConversationEvent, Listener | Iterable[Listener]] | None = None,
        error: ErrorHandler | None = None,
        snapshot: ConversationSnapshot | Mapping[str, Any] | None = None,
    ) -> None:
        if id is not None and not isinstance(id, str):
            raise TypeError(f"id must be a string, not {type(id).__name__}")
        if summarize is not None and not callable(summarize):
            raise TypeError("summarize must be an async callable")
        if error is not None and not callable(error):
            raise TypeError("error must be callable")
        self._keep = _check_keep(keep)
        self._cap = _check_cap(sections)
        self._summarize = summarize
        self._emitter = Emitter(on=on, error=error)
        self._lock = asyncio.Lock()
        self._id = id or mint_id()
        self._summary: str | None = None
        self._sections: tuple[Section, ...] = ()
        self._tail: dict[str, Message] = {}
        self._recaps: tuple[Message, ...] = ()
        self._tail_cache: tuple[Message, ...] | None = ()
        self._view_cache: tuple[Message, ...] | None = ()
        if snapshot is not None:
            self._restore(snapshot)

    def _restore(self, snapshot: object) -> None:
        if not is_conversation_snapshot(snapshot):
            raise ValueError("snapshot must be a valid conversation snapshot")
        # A private copy (of any mapping): nothing the caller holds reaches the conversation.
        data: Mapping[str, Any] = copy.deepcopy(dict(snapshot))
        try:
            sections = tuple(
                Section(
                    item["id"],
                    item["summary"],
                    tuple(create_message(message) for message in item["messages"]),
                )
                for item in data["sections"]
            )
            tail = [create_message(message) for message in data["messages"]]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"snapshot holds an invalid message: {exc}") from exc
        if len({message.id for message in tail}) != len(tail):
            raise ValueError("snapshot messages must have unique ids")
        self._id = data["id"]
        self._summary = data.get("summary")
        self._set_sections(sections)
        self._tail = {message.id: message for message in tail}
        self._touch()

    # -- live tail ---------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def emitter(self) -> Emitter[ConversationEvent]:
        """Events: ``compact`` (section), ``summary`` (str), ``rehydrate`` (id, messages),
        ``collapse`` (merged section)."""
        return self._emitter

    @property
    def count(self) -> int:
        """The live tail's size."""
        return len(self._tail)

    @property
    def summary(self) -> str | None:
        """The rollup over every section; ``None`` until the first compaction."""
        return self._summary

    @property
    def sections(self) -> tuple[Section, ...]:
        """The compacted history, oldest first."""
        return self._sections

    @property
    def summarizable(self) -> bool:
        """Whether a summarizer was supplied (automatic compaction gates on it)."""
        return self._summarize is not None

    @overload
    def add(self, value: MessageInput) -> Message: ...
    @overload
    def add(self, value: Sequence[MessageInput]) -> tuple[Message, ...]: ...
    def add(self, value: MessageInput | Sequence[MessageInput]) -> Message | tuple[Message, ...]:
        """Append one message or a list; returns the stored message(s).

        An input's own ``id`` is kept unless a live message already has it; otherwise a fresh
        one is minted, so ``add`` never overwrites. A batch is validated whole before any
        message is stored.
        """
        if type(value) is Message:
            # The agent loop's path: an already-valid immutable record.
            return self._store([value])[0]
        if isinstance(value, Message | Mapping):
            return self._store([create_message(value)])[0]
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise TypeError("message must be a mapping, a Message, or a list of them")
        return tuple(self._store([create_message(item) for item in value]))

    def _store(self, created: list[Message]) -> list[Message]:
        stored: list[Message] = []
        for message in created:
            if message.id in self._tail:
                message = create_message(message, id=mint_id())
            self._tail[message.id] = message
            stored.append(message)
        self._touch()
        return stored

    def message(self, id: str) -> Message | None:
        """The live message with ``id``, or ``None``."""
        return self._tail.get(id)

    def messages(self) -> tuple[Message, ...]:
        """The live (uncompacted) tail, in insertion order."""
        if self._tail_cache is None:
            self._tail_cache = tuple(self._tail.values())
        return self._tail_cache

    def remove(self, id: str | Sequence[str]) -> bool:
        """Remove one live message by id, or a list; whether any was removed."""
        ids = [id] if isinstance(id, str) else id
        if isinstance(ids, bytes) or not isinstance(ids, Sequence):
            raise TypeError("id must be a message id or a list of ids")
        removed = False
        for item in ids:
            if self._tail.pop(item, None) is not None:
                removed = True
        if removed:
            self._touch()
        return removed

    def clear(self) -> None:
        """Empty the live tail; the sections are untouched."""
        self._tail.clear()
        self._touch()

    def _touch(self) -> None:
        self._tail_cache = None
        self._view_cache = None

    def _set_sections(self, sections: tuple[Section, ...]) -> None:
        self._sections = sections
        self._recaps = tuple(
            Message(section.id, "assistant", CONVERSATION_RECAP_PREFIX + section.summary)
            for section in sections
        )
        self._view_cache = None

    # -- compaction --------------------------------------------------------------------------

    def view(self) -> tuple[Message, ...]:
        """The model input: one recap per section, then the live tail verbatim."""
        if self._view_cache is None:
            self._view_cache = self._recaps + self.messages()
        return self._view_cache

    async def compact(self, keep: int | None = None, sections: int | None = None) -> Section | None:
        """Fold the oldest live messages into a new section; ``None`` when nothing folds.

        Calls the summarizer for the section, again for the rollup, and a third time when the
        ``sections`` cap overflows. Atomic: if the summarizer raises, nothing changes; if it
        answers a blank summary (no usable text), nothing folds either (seed 004: a no-op,
        the context untouched), so a recap never replaces the history with nothing.

        Raises:
            ConversationError: ``SUMMARIZER`` without a summarizer; ``SECTIONS`` for a cap < 1.
        """
        summarize = self._summarize
        if summarize is None:
            raise ConversationError("SUMMARIZER", "compact() needs a summarizer (summarize=...)")
        kept = _check_keep(keep)
        if kept is None:
            kept = self._keep if self._keep is not None else DEFAULT_CONVERSATION_KEEP
        cap = _check_cap(sections)
        if cap is None:
            cap = self._cap
        async with self._lock:
            tail = self.messages()
            cut = _fold_cut(tail, kept)
            if cut == 0:
                return None
            folded = tail[:cut]
            summary = await _call(summarize, folded)
            if not summary.strip():
                return None
            section = Section(mint_id(), summary, folded)
            history = (*self._sections, section)
            rollup = await _call(summarize, _as_prompt(history))
            if not rollup.strip():
                return None
            merged: Section | None = None
            if cap is not None and len(history) > cap:
                overflow = history[: len(history) - cap + 1]
                recap = await _call(summarize, _as_prompt(overflow))
                if not recap.strip():
                    return None
                merged = Section(
                    mint_id(),
                    recap,
                    tuple(message for item in overflow for message in item.messages),
                )
                history = (merged, *history[len(overflow) :])
            # Every await is behind us: commit in one synchronous step.
            for message in folded:
                self._tail.pop(message.id, None)
            self._touch()
            self._set_sections(history)
            self._summary = rollup
        self._emitter.emit("summary", rollup)
        self._emitter.emit("compact", section)
        if merged is not None:
            self._emitter.emit("collapse", merged)
        return section

    def rehydrate(self, id: str) -> tuple[Message, ...]:
        """A section's original messages; emits ``rehydrate`` on a hit, empty (silent) on a miss."""
        for section in self._sections:
            if section.id == id:
                self._emitter.emit("rehydrate", id, section.messages)
                return section.messages
        return ()

    def search(self, query: str) -> tuple[Message, ...]:
        """Messages whose content, or a document's text, contains ``query`` (case-insensitive):
        sections, then tail."""
        if not isinstance(query, str):
            raise TypeError("query must be a string")
        needle = query.casefold()
        found = [
            message
            for section in self._sections
            for message in section.messages
            if _matches(message, needle)
        ]
        found.extend(message for message in self._tail.values() if _matches(message, needle))
        return tuple(found)

    def reference(
        self,
        label: str | None = None,
        summary: bool = True,
        messages: Sequence[MessageInput] | None = None,
    ) -> str:
        """Render this conversation as a provenance block to pull into another one.

        One line each: the marker, ``Summary: <rollup>`` (when ``summary`` and a rollup
        exists), then ``Relevant messages:`` and one ``- role: content`` line per message (when
        any are given). A pure string; no model call, no event.
        """
        name = self._id if label is None else label
        lines = [f'[Reference — conversation "{name}" — NOT part of this conversation]']
        if summary and self._summary is not None:
            lines.append(f"Summary: {self._summary}")
        if messages:
            lines.append("Relevant messages:")
            for item in messages:
                message = create_message(item)
                lines.append(f"- {message.role}: {message.content}")
        return "\n".join(lines)

    def snapshot(self) -> ConversationSnapshot:
        """The conversation as plain JSON (the summarizer and ``keep`` are config, not data)."""
        data: ConversationSnapshot = {
            "id": self._id,
            "sections": [section.to_dict() for section in self._sections],
            "messages": [_message_json(message) for message in self._tail.values()],
        }
        if self._summary is not None:
            data["summary"] = self._summary
        return data

    def __repr__(self) -> str:
        return (
            f"Conversation(id={self._id!r}, count={len(self._tail)}, "
            f"sections={len(self._sections)})"
        )


async def _call(summarize: ConversationSummarizer, messages: Sequence[Message]) -> str:
    text = await summarize(messages)
    if not isinstance(text, str):
        raise TypeError(f"summarize must return a string, not {type(text).__name__}")
    return text


def create_conversation(
    id: str | None = None,
    summarize: ConversationSummarizer | None = None,
    keep: int | None = None,
    sections: int | None = None,
    on: Mapping[ConversationEvent, Listener | Iterable[Listener]] | None = None,
    error: ErrorHandler | None = None,
    snapshot: ConversationSnapshot | Mapping[str, Any] | None = None,
) -> Conversation:
    """Create a ``Conversation`` (see its arguments)."""
    return Conversation(id, summarize, keep, sections, on, error, snapshot)


def _matches(message: Message, needle: str) -> bool:
    """Whether ``needle`` (case-folded) is in the message's content or its documents' text."""
    if needle in message.content.casefold():
        return True
    return bool(message.documents) and needle in documents_text(message.documents).casefold()
