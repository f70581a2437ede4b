"""The one check every front door applies to what a client sent: text the database can hold
(no NUL, no lone surrogate) in JSON no deeper than ``MAX_DEPTH``.

PostgreSQL takes neither: a NUL in a query parameter or a ``text`` column is refused ("A
string literal cannot contain NUL (0x00) characters"), ``\\u0000`` in ``jsonb`` too; and a
lone surrogate (JSON's ``"\\ud83d"`` alone decodes to one) has no UTF-8 form, so the driver
fails before the query is sent. Either one reaching a query or a column was a 500 (SQLite
stores both, which hid it). Every door checks what a client sent here, before it reaches the
database, and refuses it in its own error shape:

- URLs (paths and query strings): ``orkestrel.request_gate``, for every HTTP request;
- JSON bodies (their nesting too): ``agents.api.parsers`` (``/api/``), ``agents.openai.fields``
  (``/v1``), the import's lines (``conversations.transfer``), the socket's frames
  (``agents.consumers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["MAX_DEPTH", "TOO_DEEP", "Fault", "first_fault", "problem"]

Problem = Literal["a NUL character", "an unpaired surrogate", "nesting too deep"]
NUL: Final[Problem] = "a NUL character"
SURROGATE: Final[Problem] = "an unpaired surrogate"
TOO_DEEP: Final[Problem] = "nesting too deep"
# Arrays and objects inside each other: far past any real body (OpenAI caps a structured
# output's schema at 10 levels), far under where the recursive code a body meets (jsonschema,
# DRF's fields, PostgreSQL's jsonb) runs out of stack. ``json`` itself parses about 10,000
# levels and raises ``RecursionError`` past that: each door answers that as a 400 too.
MAX_DEPTH: Final = 100


def problem(text: str) -> Problem | None:
    """What keeps ``text`` out of the database, or ``None`` when it may be stored."""
    if "\x00" in text:
        return NUL
    # An ASCII string (most are) has no surrogate; the check is one pass in C.
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return SURROGATE
    return None


@dataclass(frozen=True, kw_only=True)
class Fault:
    """The first string of a value that may not be stored, and where it is."""

    path: tuple[str | int, ...]
    problem: Problem
    # Whether the string is the last step's key rather than its value.
    in_key: bool = False

    @property
    def param(self) -> str:
        """Where, as a client would write it: ``messages[2].content``; ``""`` for the whole."""
        where = ""
        for step in self.path:
            if isinstance(step, int):
                where += f"[{step}]"
            else:
                where += f".{step}" if where else step
        return where

    @property
    def message(self) -> str:
        """The refusal, naming where: ``'messages[2].content' holds a NUL character.``"""
        if self.problem == TOO_DEEP:
            return f"The JSON nests deeper than {MAX_DEPTH} levels."
        if self.in_key:
            where = f"A key of '{self.param}'" if self.path else "A key"
        else:
            where = f"'{self.param}'" if self.path else "The text"
        return f"{where} holds {self.problem}."


def first_fault(value: object) -> Fault | None:
    """The first string (key or value) in a parsed JSON ``value`` that may not be stored, or
    the first array or object nested deeper than ``MAX_DEPTH``.

    Walked with a stack, not recursion: however deep the parser let a body nest, this does
    not add to it.
    """
    stack: list[tuple[tuple[str | int, ...], object]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            found = problem(item)
            if found is not None:
                return Fault(path=path, problem=found)
        elif len(path) >= MAX_DEPTH and isinstance(item, Mapping | list | tuple):
            return Fault(path=path, problem=TOO_DEEP)
        elif isinstance(item, Mapping):
            children: list[tuple[tuple[str | int, ...], object]] = []
            for key, child in item.items():
                if isinstance(key, str):
                    found = problem(key)
                    if found is not None:
                        # The key itself cannot be quoted: it is what holds the fault.
                        return Fault(path=path, problem=found, in_key=True)
                children.append(((*path, key), child))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([((*path, index), child) for index, child in enumerate(item)]))
    return None
