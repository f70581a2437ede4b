"""Scopes: named allow-list filters over instructions, tools, files and messages.

Each list is three-way: ``None`` lets everything through, ``()`` lets nothing through, and a
non-empty list lets only its keys through. ``narrow`` composes by set intersection, so a child
scope can only tighten its parent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict, TypeVar, cast

from .emitter import Emitter, ErrorHandler, Listener
from .messages import mint_id

__all__ = [
    "SCOPE_CATEGORIES",
    "Scope",
    "ScopeCategory",
    "ScopeConfiguration",
    "ScopeInput",
    "ScopeManager",
    "create_scope",
    "create_scope_manager",
    "filter_allow_list",
]

T = TypeVar("T")

ScopeCategory = Literal["instructions", "tools", "files", "messages"]
SCOPE_CATEGORIES: Final[tuple[ScopeCategory, ...]] = ("instructions", "tools", "files", "messages")


class ScopeConfiguration(TypedDict, total=False):
    """The four allow-lists: instructions and tools by name, files by path, messages by id."""

    instructions: Sequence[str] | None
    tools: Sequence[str] | None
    files: Sequence[str] | None
    messages: Sequence[str] | None


class ScopeInput(ScopeConfiguration, total=False):
    """A ``ScopeConfiguration`` plus the scope's ``name`` (the id is minted)."""

    name: str


def _allow_list(value: object, field: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    # A bare string would silently become a list of characters.
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"scope {field} must be a list of strings or None")
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise TypeError(f"scope {field} must be a list of strings or None")
    return items


def _intersect(
    parent: tuple[str, ...] | None, child: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    if child is None:
        return parent
    if parent is None:
        return child
    keep = set(child)
    return tuple(key for key in parent if key in keep)


def _configuration(value: object, label: str) -> dict[str, tuple[str, ...] | None]:
    if isinstance(value, Scope):
        return {category: getattr(value, category) for category in SCOPE_CATEGORIES}
    if not isinstance(value, Mapping):
        raise TypeError(f"{label} must be a mapping or a Scope, not {type(value).__name__}")
    unknown = set(value) - {*SCOPE_CATEGORIES, "name", "id"}
    if unknown:
        raise TypeError(f"unknown {label} fields: {sorted(map(str, unknown))}")
    return {category: _allow_list(value.get(category), category) for category in SCOPE_CATEGORIES}


@dataclass(frozen=True, slots=True)
class Scope:
    """A named, immutable allow-list filter; the lists are copied in as tuples.

    Attributes:
        id: Minted identity (two scopes may share a ``name``).
        name: Human label.
        instructions: Allowed instruction names (``None`` = all, ``()`` = none).
        tools: Allowed tool names.
        files: Allowed workspace file paths.
        messages: Allowed message ids (for callers' own filtering; a conversation owns inclusion).
    """

    id: str
    name: str
    instructions: tuple[str, ...] | None = None
    tools: tuple[str, ...] | None = None
    files: tuple[str, ...] | None = None
    messages: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TypeError("scope id must be a non-empty string")
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("scope name must be a non-empty string")
        for category in SCOPE_CATEGORIES:
            object.__setattr__(self, category, _allow_list(getattr(self, category), category))

    def narrow(self, config: ScopeConfiguration | Scope | Mapping[str, Any]) -> Scope:
        """A new, tighter scope: each list intersected with ``config``'s (``None`` imposes nothing).

        Keeps this scope's order and ``name``, mints a new ``id``, and never widens.
        """
        lists = _configuration(config, "scope configuration")
        return Scope(
            mint_id(),
            self.name,
            *(_intersect(getattr(self, c), lists[c]) for c in SCOPE_CATEGORIES),
        )


def create_scope(
    input: ScopeInput | Mapping[str, Any] | str | None = None,
    /,
    *,
    name: str | None = None,
    instructions: Sequence[str] | None = None,
    tools: Sequence[str] | None = None,
    files: Sequence[str] | None = None,
    messages: Sequence[str] | None = None,
    id: str | None = None,
) -> Scope:
    """Create a ``Scope`` from keywords, a ``ScopeInput`` mapping, or a name; mints the ``id``.

    Keywords given alongside a mapping override its fields.
    """
    fields: dict[str, Any] = {}
    if isinstance(input, str):
        fields["name"] = input
    elif isinstance(input, Mapping):
        # Read as a plain mapping: an ``id`` is accepted beside the ``ScopeInput`` fields.
        data: Mapping[str, Any] = input
        fields.update(_configuration(data, "scope input"))
        if "name" in data:
            fields["name"] = data["name"]
        if "id" in data:
            fields["id"] = data["id"]
    elif input is not None:
        raise TypeError(f"scope input must be a mapping or a name, not {type(input).__name__}")
    given = {
        "name": name,
        "instructions": instructions,
        "tools": tools,
        "files": files,
        "messages": messages,
        "id": id,
    }
    fields.update({key: value for key, value in given.items() if value is not None})
    if "name" not in fields:
        raise TypeError("scope name is required")
    return Scope(
        fields.get("id") or mint_id(),
        fields["name"],
        *(fields.get(category) for category in SCOPE_CATEGORIES),
    )


def filter_allow_list(
    items: Iterable[T],
    allow: Sequence[str] | None,
    key: Callable[[T], str] | None = None,
) -> Sequence[T]:
    """Filter ``items`` by an allow-list of keys, keeping their original order.

    ``None`` returns ``items`` unchanged (as given when it is a list or tuple); ``[]`` returns
    ``()``; otherwise only items whose ``key(item)`` (the item itself when ``key`` is None) is
    listed. Membership is by key equality, not identity.
    """
    if allow is None:
        return items if isinstance(items, list | tuple) else tuple(items)
    if isinstance(allow, str):
        # ``set("safety")`` would silently allow single characters.
        raise TypeError("allow must be a list of keys, not a string")
    if not allow:
        return ()
    allowed = set(allow)
    if key is None:
        return tuple(item for item in items if cast(str, item) in allowed)
    return tuple(item for item in items if key(item) in allowed)


ScopeEvent = Literal["create", "remove", "clear"]
ScopeManagerHooks = Mapping[ScopeEvent, Listener | Iterable[Listener]]


class ScopeManager:
    """The id-keyed registry of reusable named scopes.

    Events (after the mutation): ``create`` (the scope), ``remove`` (each removed scope),
    ``clear`` (no arguments). A raising listener goes to ``error`` and never reaches the caller.
    """

    __slots__ = ("_emitter", "_scopes")

    def __init__(self, on: ScopeManagerHooks | None = None, error: ErrorHandler | None = None):
        self._scopes: dict[str, Scope] = {}
        self._emitter = Emitter(on=on, error=error)

    @property
    def emitter(self) -> Emitter[ScopeEvent]:
        """The push surface: ``create`` / ``remove`` / ``clear``."""
        return self._emitter

    @property
    def count(self) -> int:
        """How many scopes are stored."""
        return len(self._scopes)

    def create(self, input: ScopeInput | Mapping[str, Any] | Scope) -> Scope:
        """Mint a scope (always a fresh id, so it always adds) and store it."""
        if isinstance(input, Scope):
            scope = Scope(
                mint_id(), input.name, input.instructions, input.tools, input.files, input.messages
            )
        elif isinstance(input, Mapping):
            scope = create_scope({k: v for k, v in input.items() if k != "id"})
        else:
            raise TypeError(f"scope input must be a mapping, not {type(input).__name__}")
        self._scopes[scope.id] = scope
        self._emitter.emit("create", scope)
        return scope

    def scope(self, id: str) -> Scope | None:
        """The scope stored under ``id``, or ``None``."""
        return self._scopes.get(id)

    def scopes(self) -> tuple[Scope, ...]:
        """Every stored scope, in insertion order."""
        return tuple(self._scopes.values())

    def remove(self, ids: str | Sequence[str]) -> bool:
        """Remove one scope by id, or a list; ``True`` when any was removed."""
        targets = (ids,) if isinstance(ids, str) else ids
        removed = [scope for id in targets if (scope := self._scopes.pop(id, None)) is not None]
        for scope in removed:
            self._emitter.emit("remove", scope)
        return bool(removed)

    def clear(self) -> None:
        """Remove every scope."""
        self._scopes.clear()
        self._emitter.emit("clear")


def create_scope_manager(
    on: ScopeManagerHooks | None = None, error: ErrorHandler | None = None
) -> ScopeManager:
    """Create an empty ``ScopeManager``."""
    return ScopeManager(on=on, error=error)
