"""1-based carets and half-open ranges over text, and the total helpers that apply them.

Lines and columns both count from 1 (column 1 is a line's first character); a ``Range`` is
``start``-inclusive and ``end``-exclusive. Every helper clamps a range to the text before it
applies it and never raises, whatever it is given. Columns count code points (Python ``str``
indices); lines are separated by ``"\\n"`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # ``typing.TypeIs`` from Python 3.13

__all__ = [
    "Position",
    "PositionInput",
    "Range",
    "RangeInput",
    "clamp_position",
    "clamp_range",
    "is_valid_range",
    "offset_at",
    "range_of",
    "slice_range",
    "splice_range",
    "to_position",
    "to_range",
]


@dataclass(frozen=True, slots=True)
class Position:
    """A 1-based caret: ``line`` and ``column`` both count from 1.

    Not validated on construction: a position may point outside a text (the helpers clamp
    it); ``is_valid_range`` says whether a range is structurally sound.
    """

    line: int
    column: int

    def to_dict(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column}


@dataclass(frozen=True, slots=True)
class Range:
    """A half-open span: ``start`` inclusive, ``end`` exclusive."""

    start: Position
    end: Position

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {"start": self.start.to_dict(), "end": self.end.to_dict()}


PositionInput = Position | Mapping[str, Any]
RangeInput = Range | Mapping[str, Any]


def _is_int(value: object) -> TypeIs[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def to_position(value: PositionInput, name: str = "position") -> Position:
    """Coerce a ``Position`` or ``{"line", "column"}`` mapping; ``TypeError`` names the field."""
    return _position(value, name)


def _position(value: object, name: str) -> Position:
    # ``to_position`` over untrusted input (a range mapping's ends are not checked yet).
    line: object
    column: object
    if isinstance(value, Position):
        line, column = value.line, value.column
    elif isinstance(value, Mapping):
        line, column = value.get("line"), value.get("column")
    else:
        raise TypeError(f"{name} must be a mapping with line and column, not {value!r}")
    if not _is_int(line):
        raise TypeError(f"{name}.line must be an int, not {line!r}")
    if not _is_int(column):
        raise TypeError(f"{name}.column must be an int, not {column!r}")
    return value if isinstance(value, Position) else Position(line, column)


def to_range(value: RangeInput, name: str = "range") -> Range:
    """Coerce a ``Range`` or ``{"start": {...}, "end": {...}}`` mapping.

    Only the shape is checked (int components); an inverted or sub-1 range passes through.
    Raises ``TypeError`` naming the offending field.
    """
    start: object
    end: object
    if isinstance(value, Range):
        start, end = value.start, value.end
    elif isinstance(value, Mapping):
        start, end = value.get("start"), value.get("end")
    else:
        raise TypeError(f"{name} must be a mapping with start and end, not {value!r}")
    return Range(_position(start, f"{name}.start"), _position(end, f"{name}.end"))


def range_of(start_line: int, start_column: int, end_line: int, end_column: int) -> Range:
    """Lift four flat 1-based ints into a nested ``Range``, verbatim (no validation)."""
    return Range(Position(start_line, start_column), Position(end_line, end_column))


def _caret(value: object) -> tuple[object, object] | None:
    try:
        if isinstance(value, Position):
            return value.line, value.column
        if isinstance(value, Mapping):
            return value.get("line"), value.get("column")
    except Exception:  # noqa: BLE001 - the helpers are total
        return None
    return None


def _ends(value: object) -> tuple[object, object] | None:
    try:
        if isinstance(value, Range):
            return value.start, value.end
        if isinstance(value, Mapping):
            return value.get("start"), value.get("end")
    except Exception:  # noqa: BLE001 - the helpers are total
        return None
    return None


def is_valid_range(value: object) -> bool:
    """Whether ``value`` is a structurally valid range: int components ``>= 1``, start <= end."""
    ends = _ends(value)
    if ends is None:
        return False
    start, end = _whole(_caret(ends[0])), _whole(_caret(ends[1]))
    if start is None or end is None:
        return False
    return start <= end


def _whole(caret: tuple[object, object] | None) -> tuple[int, int] | None:
    """A caret whose components are both ints ``>= 1``, else ``None``."""
    if caret is None:
        return None
    line, column = caret
    if _is_int(line) and _is_int(column) and line >= 1 and column >= 1:
        return line, column
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _pin(lines: list[str], caret: tuple[object, object] | None) -> tuple[int, int]:
    # An unreadable component reads as 1: garbage lands on the text's first caret.
    raw_line, raw_column = caret if caret is not None else (1, 1)
    line = min(max(raw_line if _is_int(raw_line) else 1, 1), len(lines))
    column = min(max(raw_column if _is_int(raw_column) else 1, 1), len(lines[line - 1]) + 1)
    return line, column


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(text) + 1 for text in lines[: line - 1]) + column - 1


def _span(text: str, value: object) -> tuple[tuple[int, int], tuple[int, int]]:
    lines = text.split("\n")
    ends = _ends(value)
    start = _pin(lines, _caret(ends[0]) if ends else None)
    end = _pin(lines, _caret(ends[1]) if ends else None)
    # An inverted range collapses to an empty span at its start, so nothing is duplicated.
    return start, max(start, end)


def clamp_position(text: str, position: PositionInput) -> Position:
    """Pin a 1-based caret to one that exists in ``text`` (total)."""
    lines = _text(text).split("\n")
    return Position(*_pin(lines, _caret(position)))


def clamp_range(text: str, value: RangeInput) -> Range:
    """Clamp both ends into ``text``; an inverted range collapses to an empty span at its start."""
    start, end = _span(_text(text), value)
    return Range(Position(*start), Position(*end))


def offset_at(text: str, position: PositionInput) -> int:
    """The 0-based string offset of a (clamped) 1-based caret; at most ``len(text)``."""
    lines = _text(text).split("\n")
    return _offset(lines, *_pin(lines, _caret(position)))


def _offsets(text: str, value: object) -> tuple[int, int]:
    lines = text.split("\n")
    start, end = _span(text, value)
    return _offset(lines, *start), _offset(lines, *end)


def slice_range(text: str, value: RangeInput) -> str:
    """The substring a (clamped) range spans, start inclusive, end exclusive."""
    source = _text(text)
    start, end = _offsets(source, value)
    return source[start:end]


def splice_range(text: str, value: RangeInput, replacement: str) -> str:
    """``text`` with the (clamped) range replaced by ``replacement``; an empty span inserts."""
    source = _text(text)
    start, end = _offsets(source, value)
    return source[:start] + _text(replacement) + source[end:]
