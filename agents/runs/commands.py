"""Slash commands: what a submitted message asks for, read just before its run.

As seed 004 says: ``/compact [focus]`` folds the history now, ``/continue`` (or an empty
submission) answers the conversation as it stands, ``/skill name`` activates one of the
operators' skills, ``/name trailing text`` expands the operators' prompt template ``name``,
``//text`` sends ``/text`` literally, and an unknown ``/word`` stays text. Pure: templates
come from ``expand`` (``submissions`` passes the database's) and the run service acts on the
answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..models.prompts import RESERVED

__all__ = [
    "Command",
    "Compact",
    "Continue",
    "Expander",
    "LoadSkill",
    "Say",
    "interpret",
]

# ``/word rest``: the word right after the slash, then whatever follows the first whitespace.
_COMMAND = re.compile(r"/(\S+)(?:\s+(.*))?", re.DOTALL)
# A name a template can have (a slug); anything else is not looked up.
_TEMPLATE_NAME = re.compile(r"[-\w]+")

# ``expand(name, rest)``: the prompt template ``name`` with ``rest`` in it, ``None`` for none.
Expander = Callable[[str, str], str | None]


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


@dataclass(frozen=True, slots=True)
class LoadSkill:
    """Activate the skill ``name`` for the conversation (``""``: none was named)."""

    name: str


Command = Say | Continue | Compact | LoadSkill


def interpret(content: str, *, images: bool = False, expand: Expander | None = None) -> Command:
    """What ``content`` asks for. A message with images is always sent, its ``/name`` still
    expanded; a template that expands to nothing, with no images, continues."""
    text = content.strip()
    if text.startswith("//"):
        return Say(text[1:])
    command = _COMMAND.fullmatch(text)
    if command is None:
        return Say(text) if text or images else Continue()
    word, rest = command.group(1), (command.group(2) or "").strip()
    if not images:
        if word == "continue" and not rest:
            return Continue()
        if word == "compact":
            return Compact(rest or None)
        if word == "skill":
            return LoadSkill(rest)
    # No template may shadow a command (``RESERVED``), even with images or trailing text.
    if expand is not None and word not in RESERVED and _TEMPLATE_NAME.fullmatch(word):
        expanded = expand(word, rest)
        if expanded is not None:
            return Say(expanded) if expanded or images else Continue()
    return Say(text)
