"""compile_pattern: outside patterns with ``re``'s syntax and flags, within ``PatternBounds``."""

import time

import pytest

from orkestrel.core import WorkspaceError
from orkestrel.core.patterns import PatternBounds, compile_pattern

# Exponential backtracking: Python's ``re`` takes about 5 s over SUBJECT, holding the GIL.
CATASTROPHIC = r"(?:a|a)*$"
SUBJECT = "a" * 26 + "!"


def spans(pattern, text):
    return [(hit.start(), hit.end()) for hit in pattern.finditer(text)]


def test_a_literal_query_matches_its_text_and_a_regex_its_pattern():
    assert spans(compile_pattern("a.b", regex=False, exact=True), "a.b axb") == [(0, 3)]
    assert spans(compile_pattern("a.b", regex=True, exact=True), "a.b axb") == [(0, 3), (4, 7)]


def test_case_is_exact_unless_asked_and_line_anchors_hold_in_a_whole_text():
    assert spans(compile_pattern("^a", regex=True, exact=True), "a\nA\na") == [(0, 1), (4, 5)]
    loose = compile_pattern("^a", regex=True, exact=False)
    assert spans(loose, "a\nA\na") == [(0, 1), (2, 3), (4, 5)]


def test_the_replacement_is_inserted_verbatim():
    pattern = compile_pattern(r"(\w+)=(\w+)", regex=True, exact=True)
    assert pattern.subn(r"\2=\g<1>", "k=v, x=y", 1) == (r"\2=\g<1>, x=y", 1)


@pytest.mark.parametrize("query", ["(unclosed", "[z-a]", "a{2,1}"])
def test_an_invalid_pattern_is_a_pattern_error_naming_it(query):
    with pytest.raises(WorkspaceError) as caught:
        compile_pattern(query, regex=True, exact=True)
    assert caught.value.code == "PATTERN"
    assert caught.value.message.startswith(f"invalid pattern {query!r}: ")


def test_a_catastrophic_match_stops_at_the_deadline_with_the_query_in_its_context():
    pattern = compile_pattern(
        CATASTROPHIC, regex=True, exact=True, bounds=PatternBounds(timeout=0.1)
    )
    started = time.monotonic()
    with pytest.raises(WorkspaceError) as caught:
        pattern.subn("", SUBJECT)
    assert time.monotonic() - started < 1.0
    assert caught.value.code == "PATTERN"
    assert caught.value.context == {"query": CATASTROPHIC, "bound": "timeout", "timeout": 0.1}
    # The deadline is the operation's: once past, every later use refuses at once.
    with pytest.raises(WorkspaceError, match="took longer than 0.1 s"):
        pattern.finditer("b")
    with pytest.raises(WorkspaceError, match="took longer than 0.1 s"):
        pattern.check()


def test_a_long_query_is_cut_in_the_message_and_kept_whole_in_the_context():
    query = "x" * 200
    pattern = compile_pattern(query, regex=False, exact=True, bounds=PatternBounds(subject=10))
    with pytest.raises(WorkspaceError) as caught:
        pattern.finditer("y" * 11)
    assert caught.value.code == "PATTERN"
    assert caught.value.message == (
        f"pattern {'x' * 77 + '...'!r} would scan more than 10 characters"
    )
    assert caught.value.context == {"query": query, "bound": "subject", "subject": 10}
