"""Patterns from outside (a user's, a model's), matched within bounds.

Python's ``re`` runs a pattern to the end, holding the GIL throughout: ``(?:a|a)*$`` against
26 characters takes about 5 s, during which no other thread of the process (the event loop
among them) runs. A ``BoundedPattern`` matches with the ``regex`` package instead: with a
``timeout`` (the engine gives up and raises) and ``concurrent=True`` (it releases the GIL while
it matches). The deadline is one for the whole operation, however many texts it scans, and
the pattern's length and the text it scans are capped before any matching starts (compiling
is not covered by the engine's timeout: about 10 µs a character).

The syntax is ``regex``'s version 0, which is ``re``'s; the flags are ``MULTILINE`` always and
``IGNORECASE`` unless ``exact``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, cast

import regex as engine  # type: ignore[import-untyped]

from .errors import WorkspaceError

__all__ = ["DEFAULT_PATTERN_BOUNDS", "BoundedPattern", "Match", "PatternBounds", "compile_pattern"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PatternBounds:
    """How much work one search or replace with an outside pattern may do."""

    # Seconds of matching for the whole operation. A sane pattern scans a megabyte of text in
    # milliseconds; a catastrophic one would run for minutes. The engine notices its deadline
    # at checkpoints, so it may stop up to about as late again.
    timeout: float = 1.0
    # Characters of a pattern (or a literal query). Compiling holds the GIL and is not timed:
    # 10,000 characters compile in about 0.1 s; a longer literal is not an edit one types.
    pattern: int = 10_000
    # Characters one operation may scan in all: eight of the largest text file the web app
    # stores (1 MB), so a whole ordinary workspace is searchable but not an unbounded one.
    subject: int = 8 * 1024 * 1024


DEFAULT_PATTERN_BOUNDS = PatternBounds()


class Match(Protocol):
    """What a match tells: where it starts and ends in the text scanned."""

    def start(self) -> int: ...
    def end(self) -> int: ...


class _Compiled(Protocol):
    # The slice of ``regex.Pattern`` used here (the package ships no type hints).
    def finditer(self, string: str, *, concurrent: bool, timeout: float) -> Iterator[Match]: ...
    def subn(
        self,
        repl: Callable[[Match], str],
        string: str,
        count: int,
        *,
        concurrent: bool,
        timeout: float,
    ) -> tuple[str, int]: ...


class BoundedPattern:
    """A compiled outside pattern and the deadline of the one operation it serves.

    Made by ``compile_pattern``; the deadline starts when it is made. It may be made on one
    thread and used on another (the compiled pattern is immutable, the texts are ``str``),
    by one thread at a time: it counts the text scanned.
    """

    __slots__ = ("_compiled", "_deadline", "_scanned", "bounds", "query")

    def __init__(self, query: str, compiled: _Compiled, bounds: PatternBounds) -> None:
        self.query = query
        self.bounds = bounds
        self._compiled = compiled
        self._deadline = time.monotonic() + bounds.timeout
        self._scanned = 0

    def finditer(self, text: str) -> Iterator[Match]:
        """The matches in ``text``, left to right (``PATTERN`` past the bounds)."""
        remaining = self._charge(text)
        return self._timed(self._compiled.finditer(text, concurrent=True, timeout=remaining))

    def subn(self, replacement: str, text: str, count: int = 0) -> tuple[str, int]:
        """``text`` with the first ``count`` matches (0: all) replaced by ``replacement``,
        inserted verbatim (no backreference expansion), and how many were replaced."""
        remaining = self._charge(text)
        try:
            return self._compiled.subn(
                lambda _match: replacement, text, count, concurrent=True, timeout=remaining
            )
        except TimeoutError as error:
            raise self._timeout() from error

    def check(self) -> None:
        """Raise ``PATTERN`` (``context["bound"]``: ``timeout``) past the deadline."""
        if time.monotonic() >= self._deadline:
            raise self._timeout()

    def _charge(self, text: str) -> float:
        # Count the text against the operation's share before matching any of it.
        self._scanned += len(text)
        if self._scanned > self.bounds.subject:
            raise WorkspaceError(
                "PATTERN",
                f"pattern {self._shown()} would scan more than {self.bounds.subject} characters",
                context={"query": self.query, "bound": "subject", "subject": self.bounds.subject},
            )
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout()
        return remaining

    def _timed(self, matches: Iterator[Match]) -> Iterator[Match]:
        try:
            yield from matches
        except TimeoutError as error:
            raise self._timeout() from error

    def _timeout(self) -> WorkspaceError:
        return WorkspaceError(
            "PATTERN",
            f"pattern {self._shown()} took longer than {self.bounds.timeout:g} s; "
            "simplify it (nested or overlapping repeats backtrack without end)",
            context={"query": self.query, "bound": "timeout", "timeout": self.bounds.timeout},
        )

    def _shown(self) -> str:
        # Long queries are cut in the message; the context keeps the whole one.
        return repr(self.query if len(self.query) <= 80 else f"{self.query[:77]}...")


def compile_pattern(
    query: str, *, regex: bool, exact: bool, bounds: PatternBounds = DEFAULT_PATTERN_BOUNDS
) -> BoundedPattern:
    """Compile ``query`` (a pattern when ``regex``, else literal text) within ``bounds``.

    Raises:
        WorkspaceError: ``PATTERN`` when it is invalid or longer than ``bounds.pattern``.
    """
    if len(query) > bounds.pattern:
        raise WorkspaceError(
            "PATTERN",
            f"pattern of {len(query)} characters is longer than the {bounds.pattern} allowed",
            context={"query": query, "pattern": bounds.pattern},
        )
    # MULTILINE so ^/$ mean line bounds in replace (whole text) as in search (line by line).
    flags = engine.MULTILINE if exact else engine.MULTILINE | engine.IGNORECASE
    source = query if regex else engine.escape(query)
    try:
        compiled = engine.compile(source, flags | engine.VERSION0)
    except (engine.error, OverflowError, RecursionError, ValueError) as error:
        raise WorkspaceError(
            "PATTERN", f"invalid pattern {query!r}: {error}", context={"query": query}
        ) from error
    return BoundedPattern(query, cast(_Compiled, compiled), bounds)
