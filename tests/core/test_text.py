"""fenced_file and escape_regexp."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import escape_regexp, fenced_file


def test_fenced_file_matches_the_seed_example_byte_for_byte() -> None:
    block = fenced_file("src/main.ts", "typescript", "export const x = 1")
    assert block == "File: src/main.ts\n```typescript\nexport const x = 1\n```"


def test_fenced_file_infers_the_language_when_none() -> None:
    assert fenced_file("a.py", None, "x = 1") == "File: a.py\n```python\nx = 1\n```"


def test_fenced_file_keeps_an_explicit_language_and_empty_content() -> None:
    assert fenced_file("notes", "", "") == "File: notes\n```\n\n```"


def test_fenced_file_lengthens_the_fence_past_backticks_in_the_content() -> None:
    content = "intro\n```\nescaped?\n```\noutro"
    block = fenced_file("README.md", "markdown", content)
    assert block == f"File: README.md\n````markdown\n{content}\n````"


def test_fenced_file_fence_beats_the_longest_backtick_run() -> None:
    block = fenced_file("x.md", "markdown", "`````\nx")
    assert block.splitlines()[1] == "``````markdown"
    assert block.endswith("\n``````")


@given(st.text(alphabet="`a\n ", max_size=40))
def test_fenced_file_body_never_closes_the_fence_early(content: str) -> None:
    lines = fenced_file("f.txt", "text", content).split("\n")
    fence = lines[1][: len(lines[1]) - len("text")]
    assert set(fence) == {"`"}
    assert lines[-1] == fence
    body = lines[2:-1]
    assert all(fence not in line for line in body)


def test_escape_regexp_matches_its_text_literally() -> None:
    text = "a.b*c+(d)[e]{2}|f?^$\\g"
    pattern = re.compile(escape_regexp(text))
    assert pattern.fullmatch(text)
    assert not pattern.search("aXb")


@given(st.text(max_size=30))
def test_escape_regexp_round_trips_any_text(text: str) -> None:
    assert re.fullmatch(escape_regexp(text), text)
    assert re.search(escape_regexp(text), f"prefix {text} suffix")
