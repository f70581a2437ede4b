"""Instructions: named directives, and the format cascade that frames them in a prompt.

A section renders as ``[open, *items, close]`` with empty slots dropped and the rest joined
by blank lines. Each slot resolves on its own, most specific first:

- open:  manager framing ``open`` > provider ``open`` > the built-in ``## Instructions``
- item:  the item's own ``format`` > manager ``render`` > provider ``render`` > its ``content``
- close: manager framing ``close`` > provider ``close`` (no built-in close)
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast, overload

from .constants import INSTRUCTIONS_SECTION_HEADER
from .emitter import Emitter, ErrorHandler, Listener
from .messages import mint_id
from .provider import ContextFormat, ContextSectionFormat
from .scopes import filter_allow_list

__all__ = [
    "Instruction",
    "InstructionInput",
    "InstructionManager",
    "create_instruction",
    "create_instruction_manager",
    "render_instruction_section",
    "to_section_format",
]


@dataclass(frozen=True, slots=True)
class Instruction:
    """An immutable named directive.

    Attributes:
        id: Minted on every add.
        name: The registry key.
        content: The directive text.
        priority: Higher sorts first (default 0).
        format: A fully rendered string for this item, beating every ``render`` override.
    """

    id: str
    name: str
    content: str
    priority: float = 0
    format: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TypeError("instruction id must be a non-empty string")
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("instruction name must be a non-empty string")
        if not isinstance(self.content, str):
            raise TypeError(f"instruction {self.name!r} content must be a string")
        if isinstance(self.priority, bool) or not isinstance(self.priority, numbers.Real):
            raise TypeError(f"instruction {self.name!r} priority must be a number")
        if self.format is not None and not isinstance(self.format, str):
            raise TypeError(f"instruction {self.name!r} format must be a string")


class InstructionInput(TypedDict, total=False):
    """The data to author an instruction (``name`` and ``content`` required; id minted)."""

    name: str
    content: str
    priority: float
    format: str | None


_INPUT_FIELDS = frozenset({"id", "name", "content", "priority", "format"})


def create_instruction(
    input: InstructionInput | Mapping[str, Any] | Instruction | None = None,
    /,
    *,
    name: str | None = None,
    content: str | None = None,
    priority: float | None = None,
    format: str | None = None,
    id: str | None = None,
) -> Instruction:
    """Create an ``Instruction`` from keywords or a mapping, minting ``id`` unless given.

    Keywords given alongside a mapping override its fields.
    """
    fields: dict[str, Any] = {}
    if isinstance(input, Instruction):
        fields = {
            "name": input.name,
            "content": input.content,
            "priority": input.priority,
            "format": input.format,
        }
    elif isinstance(input, Mapping):
        unknown = set(input) - _INPUT_FIELDS
        if unknown:
            raise TypeError(f"unknown instruction fields: {sorted(map(str, unknown))}")
        fields = dict(input)
    elif input is not None:
        raise TypeError(f"instruction must be a mapping, not {type(input).__name__}")
    given = {"name": name, "content": content, "priority": priority, "format": format, "id": id}
    fields.update({key: value for key, value in given.items() if value is not None})
    if "name" not in fields:
        raise TypeError("instruction name is required")
    if "content" not in fields:
        raise TypeError("instruction content is required")
    priority_value = fields.get("priority")
    return Instruction(
        fields.get("id") or mint_id(),
        fields["name"],
        fields["content"],
        0 if priority_value is None else priority_value,
        fields.get("format"),
    )


def to_section_format(
    value: ContextSectionFormat | Mapping[str, Any] | None, field: str = "format"
) -> ContextSectionFormat | None:
    """Coerce ``{"open", "render", "close"}`` into a ``ContextSectionFormat``, checking slots."""
    if value is None:
        return None
    if isinstance(value, ContextSectionFormat):
        section = value
    elif isinstance(value, Mapping):
        unknown = set(value) - {"open", "render", "close"}
        if unknown:
            raise TypeError(f"unknown {field} fields: {sorted(map(str, unknown))}")
        section = ContextSectionFormat(value.get("open"), value.get("render"), value.get("close"))
    else:
        raise TypeError(f"{field} must be a mapping or a ContextSectionFormat")
    if section.open is not None and not isinstance(section.open, str):
        raise TypeError(f"{field} open must be a string")
    if section.render is not None and not callable(section.render):
        raise TypeError(f"{field} render must be callable")
    if section.close is not None and not isinstance(section.close, str):
        raise TypeError(f"{field} close must be a string")
    return section


InstructionEvent = Literal["add", "remove", "clear"]
InstructionManagerHooks = Mapping[InstructionEvent, Listener | Iterable[Listener]]
InstructionInputs = InstructionInput | Mapping[str, Any] | Instruction


class InstructionManager:
    """The name-keyed instruction registry, listed by descending priority.

    Events (after the mutation): ``add`` (each added instruction), ``remove`` (each removed
    instruction), ``clear`` (no arguments). A raising listener goes to ``error``.
    """

    __slots__ = ("_emitter", "_framing", "_items", "_sorted")

    def __init__(
        self,
        on: InstructionManagerHooks | None = None,
        error: ErrorHandler | None = None,
        format: ContextSectionFormat | Mapping[str, Any] | None = None,
    ) -> None:
        self._items: dict[str, Instruction] = {}
        self._sorted: tuple[Instruction, ...] | None = None
        self._framing = to_section_format(format)
        self._emitter = Emitter(on=on, error=error)

    @property
    def emitter(self) -> Emitter[InstructionEvent]:
        """The push surface: ``add`` / ``remove`` / ``clear``."""
        return self._emitter

    @property
    def count(self) -> int:
        """How many instructions are stored."""
        return len(self._items)

    @property
    def framing(self) -> ContextSectionFormat | None:
        """The manager-level format override (the cascade's second level), if any."""
        return self._framing

    @property
    def description(self) -> str:
        """The section header: the framing's ``open`` when set, else ``## Instructions``."""
        framing = self._framing
        if framing is not None and framing.open is not None:
            return framing.open
        return INSTRUCTIONS_SECTION_HEADER

    def format(self, item: Instruction) -> str:
        """Render one instruction: the framing's ``render`` when set, else its ``content``."""
        framing = self._framing
        if framing is not None and framing.render is not None:
            return framing.render(item)
        return item.content

    @overload
    def add(self, input: InstructionInputs) -> Instruction: ...
    @overload
    def add(self, input: Sequence[InstructionInputs]) -> list[Instruction]: ...
    def add(
        self, input: InstructionInputs | Sequence[InstructionInputs]
    ) -> Instruction | list[Instruction]:
        """Add one instruction or a list, minting each id; a same-name add overwrites it."""
        single = isinstance(input, Instruction | Mapping)
        if not single and (isinstance(input, str | bytes) or not isinstance(input, Sequence)):
            raise TypeError("instructions must be a mapping, an Instruction or a list")
        inputs: list[object] = [input] if single else list(cast(Sequence[object], input))
        # Build the whole batch first so a bad item leaves the registry untouched.
        created = [create_instruction({**_fields(value), "id": None}) for value in inputs]
        for item in created:
            self._items[item.name] = item
        self._sorted = None
        for item in created:
            self._emitter.emit("add", item)
        return created[0] if single else created

    def instruction(self, name: str) -> Instruction | None:
        """The instruction named ``name``, or ``None``."""
        return self._items.get(name)

    def instructions(self) -> tuple[Instruction, ...]:
        """Every instruction by descending priority; ties keep insertion order."""
        if self._sorted is None:
            self._sorted = tuple(sorted(self._items.values(), key=lambda i: -i.priority))
        return self._sorted

    def remove(self, names: str | Sequence[str]) -> bool:
        """Remove one instruction by name, or a list; ``True`` when any was removed."""
        targets = (names,) if isinstance(names, str) else names
        removed = [item for name in targets if (item := self._items.pop(name, None)) is not None]
        if removed:
            self._sorted = None
        for item in removed:
            self._emitter.emit("remove", item)
        return bool(removed)

    def clear(self) -> None:
        """Remove every instruction."""
        self._items.clear()
        self._sorted = None
        self._emitter.emit("clear")


def _fields(value: object) -> Mapping[str, Any]:
    if isinstance(value, Instruction):
        return {
            "name": value.name,
            "content": value.content,
            "priority": value.priority,
            "format": value.format,
        }
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"instruction must be a mapping, not {type(value).__name__}")


def create_instruction_manager(
    on: InstructionManagerHooks | None = None,
    error: ErrorHandler | None = None,
    format: ContextSectionFormat | Mapping[str, Any] | None = None,
) -> InstructionManager:
    """Create an empty ``InstructionManager`` (``format`` is the manager-level framing)."""
    return InstructionManager(on=on, error=error, format=format)


def _provider_section(provider_format: object) -> ContextSectionFormat | None:
    if provider_format is None:
        return None
    if isinstance(provider_format, Mapping):
        section = provider_format.get("instructions")
    else:
        section = getattr(provider_format, "instructions", None)
    return to_section_format(section, "provider format instructions")


def render_instruction_section(
    manager: InstructionManager,
    provider_format: ContextFormat | Mapping[str, Any] | None = None,
    allow: Sequence[str] | None = None,
) -> str:
    """Render the instructions section through the format cascade (see the module docstring).

    Args:
        manager: The instruction registry (its items, framing and built-in floor).
        provider_format: The provider's preferred framing (``provider.format``), if any.
        allow: The scope's instruction allow-list (``None`` = all, ``[]`` = none).

    Returns:
        The section text, or ``""`` when no instruction passes ``allow``.
    """
    items = filter_allow_list(manager.instructions(), allow, lambda item: item.name)
    if not items:
        return ""
    framing = manager.framing
    provider = _provider_section(provider_format)
    open_text = _first(
        framing.open if framing is not None else None,
        provider.open if provider is not None else None,
    )
    if open_text is None:
        open_text = manager.description
    parts: list[str | None] = [open_text]
    manager_render = framing.render if framing is not None else None
    provider_render = provider.render if provider is not None else None
    for item in items:
        text = item.format
        # ``None`` from a render falls through, like ``??`` over an ``undefined`` result.
        if text is None and manager_render is not None:
            text = manager_render(item)
        if text is None and provider_render is not None:
            text = provider_render(item)
        if text is None:
            text = manager.format(item)
        parts.append(text)
    parts.append(
        _first(
            framing.close if framing is not None else None,
            provider.close if provider is not None else None,
        )
    )
    return "\n\n".join(part for part in parts if part)


def _first(*values: str | None) -> str | None:
    for value in values:
        if isinstance(value, str):
            return value
    return None
