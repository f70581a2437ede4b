"""Slash commands: what a submitted message asks for, read just before its run.

As seed 004 says: ``/compact [focus]`` folds the history now, ``/continue`` (or an empty
submission) answers the conversation as it stands, ``//text`` sends ``/text`` literally, and
an unknown ``/word`` stays text. Pure: the run service acts on the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Command", "Compact", "Continue", "Say", "interpret"]


@dataclass(frozen=True, slots=True)
class Say:
    """Send ``content`` (trimmed) as the user's message."""

    content: str


@dataclass(frozen=True, slots=True)
class Continue:
    """Answer the history as it stands: no new user message."""


@dataclass(frozen=True, slots=True)
class Compact:
    """Fold older history now, with an optional ``focus`` for the summary."""

    focus: str | None


Command = Say | Continue | Compact


def interpret(content: str, *, images: bool = False) -> Command:
    """What ``content`` asks for; a message with images is always sent."""
    text = content.strip()
    if images:
        return Say(text)
    if not text:
        return Continue()
    if text.startswith("//"):
        return Say(text[1:])
    word, _, rest = text.partition(" ")
    if word == "/continue" and not rest.strip():
        return Continue()
    if word == "/compact":
        return Compact(rest.strip() or None)
    return Say(text)
