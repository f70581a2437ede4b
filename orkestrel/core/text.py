"""Small text helpers: the fenced reference block and literal regex escaping."""

from __future__ import annotations

import re

from .language import infer_language

__all__ = ["escape_regexp", "fenced_file"]

_BACKTICK_RUN = re.compile(r"`{3,}")


def fenced_file(path: str, language: str | None, content: str) -> str:
    """Render ``content`` as a fenced reference block headed by its path.

    ``File: <path>`` then a fence tagged with ``language`` (inferred from ``path`` when
    ``None``). The fence is three backticks unless ``content`` holds a run of three or more,
    in which case it is one longer than the longest run, so the body can never close the
    block early (a file cannot break out of its fence into the prompt).
    """
    tag = infer_language(path) if language is None else language
    longest = max((len(run) for run in _BACKTICK_RUN.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"File: {path}\n{fence}{tag}\n{content}\n{fence}"


def escape_regexp(text: str) -> str:
    """Escape ``text`` so a compiled pattern matches it literally (``re.escape`` semantics)."""
    return re.escape(text)
