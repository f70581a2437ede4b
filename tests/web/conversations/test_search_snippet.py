"""``services.search_snippet``: the part of a matching message a search result shows."""

from __future__ import annotations

from conversations.services import SNIPPET_LENGTH, search_snippet


def test_the_text_is_escaped_and_every_match_marked_whatever_its_case():
    snippet = search_snippet('<img src=x onerror="alert(1)"> Lisbon or LISBON', "lisbon")
    assert snippet == (
        "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; <mark>Lisbon</mark> or <mark>LISBON</mark>"
    )


def test_a_long_text_is_cut_around_the_first_match_on_word_bounds():
    text = (
        " ".join(f"w{n}" for n in range(200)) + " needle " + " ".join("x" * 3 for _ in range(200))
    )
    snippet = search_snippet(text, "needle")
    assert snippet is not None
    assert snippet.startswith("…w") and snippet.endswith("…")
    assert "<mark>needle</mark>" in snippet
    body = snippet.strip("…").replace("<mark>", "").replace("</mark>", "")
    assert len(body) <= SNIPPET_LENGTH and body.split()[0] in text.split()


def test_a_query_of_several_words_matches_across_line_breaks():
    assert search_snippet("take the\n\n  tram  28", "the tram") == "take <mark>the tram</mark> 28"


def test_no_text_is_no_snippet_and_an_unmatched_text_shows_its_start():
    assert search_snippet(None, "x") is None
    assert search_snippet("   ", "x") is None
    assert search_snippet("a & b", "zzz") == "a &amp; b"
