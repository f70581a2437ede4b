"""Skills: the catalogue of instructions operators offer, and activating them on a conversation.

As seed 004's ``skillLoad``: every requested name is checked before anything changes (an
unknown one activates nothing), an active skill asked for again is a no-op, and the activation
is durable (``Conversation.skills``): each later run of the conversation adds the skills'
instructions (``load_spec``). The catalogue a conversation is offered is what its profile's
scope lets through, the scope that filters its prompt's instructions.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction

from conversations.models import Conversation
from orkestrel.refusals import Refusal

from ..models import Skill

__all__ = [
    "Activation",
    "SkillEntry",
    "UnknownSkill",
    "activate_skills",
    "list_skills",
    "load_catalogue",
    "skill_catalogue",
    "skill_instructions",
]


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """One offered skill: its name, when it helps, and its instruction (``InstructionManager``
    input)."""

    name: str
    description: str
    instruction: Mapping[str, Any]


class UnknownSkill(LookupError, Refusal):
    """A requested skill is not offered to the conversation (or none was named): nothing was
    activated."""

    code = "unknown_skill"
    field = "content"

    def __init__(self, names: Sequence[str], offered: Sequence[str]) -> None:
        choices = ", ".join(offered) if offered else "none are offered"
        if names:
            listed = ", ".join(repr(name) for name in names)
            message = f"no skill named {listed}; the skills: {choices}"
        else:
            message = f"name a skill to activate; the skills: {choices}"
        super().__init__(message)
        self.names = tuple(names)
        self.offered = tuple(offered)


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(name) for name in names)


@dataclass(frozen=True, slots=True)
class Activation:
    """What an activation did: ``entries`` are the skills asked for, ``added`` the names that
    were not active yet, ``active`` every active name, in activation order."""

    entries: tuple[SkillEntry, ...]
    added: tuple[str, ...]
    active: tuple[str, ...]

    @property
    def code(self) -> Literal["skill_activated", "skill_active"]:
        """``skill_activated`` when something changed, else ``skill_active`` (a no-op)."""
        return "skill_activated" if self.added else "skill_active"

    @property
    def message(self) -> str:
        """What the user reads."""
        if len(self.added) == 1:
            return f"Skill {_names(self.added)} is active in this conversation from now on."
        if self.added:
            return f"Skills {_names(self.added)} are active in this conversation from now on."
        asked = tuple(entry.name for entry in self.entries)
        return f"Skill {_names(asked)} was active already; nothing changed."


def load_catalogue() -> dict[str, SkillEntry]:
    """Every skill whose instruction is enabled, by name (one query)."""
    rows = Skill.objects.filter(instruction__enabled=True).select_related("instruction")
    return {
        row.instruction.name: SkillEntry(
            row.instruction.name, row.description, row.instruction.to_core_input()
        )
        for row in rows.order_by("instruction__name")
    }


_lock = threading.Lock()
_cache: dict[int, dict[str, SkillEntry]] = {}


def skill_catalogue(revision: int | None) -> Mapping[str, SkillEntry]:
    """``load_catalogue`` as of the configuration ``revision``, read once per revision per
    process (every skill or instruction write moves the revision). Treat it as read-only."""
    if revision is not None:
        with _lock:
            cached = _cache.get(revision)
        if cached is not None:
            return cached
    catalogue = load_catalogue()
    if revision is not None:
        with _lock:
            _cache.clear()
            _cache[revision] = catalogue
    return catalogue


def skill_instructions(names: Sequence[str], revision: int | None) -> tuple[Mapping[str, Any], ...]:
    """The instructions of the active skills ``names`` that are still offered (no query while
    the catalogue of ``revision`` is cached)."""
    catalogue = skill_catalogue(revision)
    return tuple(catalogue[name].instruction for name in names if name in catalogue)


def _offered(conversation: Conversation) -> dict[str, SkillEntry]:
    """The catalogue through the conversation's profile's scope (its instruction allow-list)."""
    catalogue = load_catalogue()
    profile = conversation.profile
    scope = profile.scope if profile is not None else None
    if scope is None or scope.instructions is None:
        return catalogue
    allowed = set(scope.instructions)
    return {name: entry for name, entry in catalogue.items() if name in allowed}


def _conversation(user_id: int, conversation_id: str, *, lock: bool) -> Conversation:
    rows = Conversation.objects.select_related("profile__scope")
    if lock:
        # Only the conversation's row: its profile and scope are read, not changed.
        rows = rows.select_for_update(of=("self",))
    conversation = rows.filter(id=conversation_id, owner_id=user_id).first()
    if conversation is None:
        raise LookupError(f"no conversation {conversation_id!r}")
    return conversation


def list_skills(user_id: int, conversation_id: str) -> list[dict[str, Any]]:
    """The skills offered to the user's conversation: ``[{name, description, active}]``."""
    conversation = _conversation(user_id, conversation_id, lock=False)
    active = set(conversation.skills or ())
    return [
        {"name": entry.name, "description": entry.description, "active": entry.name in active}
        for entry in _offered(conversation).values()
    ]


def activate_skills(user_id: int, conversation_id: str, names: Sequence[str]) -> Activation:
    """Activate the skills ``names`` on the user's conversation, all or none (``UnknownSkill``
    names the ones not offered); one already active is left as it is."""
    wanted = tuple(dict.fromkeys(name.strip() for name in names if name.strip()))
    with transaction.atomic():
        conversation = _conversation(user_id, conversation_id, lock=True)
        offered = _offered(conversation)
        unknown = [name for name in wanted if name not in offered]
        if unknown or not wanted:
            raise UnknownSkill(unknown, list(offered))
        active = list(conversation.skills or ())
        added = tuple(name for name in wanted if name not in active)
        if added:
            active.extend(added)
            Conversation.objects.filter(pk=conversation.pk).update(skills=active)
    return Activation(tuple(offered[name] for name in wanted), added, tuple(active))
