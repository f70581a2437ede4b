"""ThinkSplitter: inline ``<think>`` reasoning separated from the answer, delta by delta."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import THINK_CLOSE, THINK_OPEN, ThinkSplitter, create_think_splitter


def feed(deltas: list[str]) -> tuple[ThinkSplitter, list[str], list[str]]:
    """Run deltas through a fresh splitter; return it, the returned pieces, the thinking pieces."""
    splitter = create_think_splitter()
    returned: list[str] = []
    thoughts: list[str] = []
    for delta in deltas:
        returned.append(splitter.split(delta))
        thoughts.append(splitter.last_thinking)
    returned.append(splitter.flush())
    thoughts.append(splitter.last_thinking)
    return splitter, returned, thoughts


def test_factory_returns_a_fresh_splitter_each_time() -> None:
    first, second = create_think_splitter(), create_think_splitter()
    assert isinstance(first, ThinkSplitter)
    assert first is not second
    first.split("<think>x")
    assert second.thinking == ""


def test_plain_text_passes_through_unchanged() -> None:
    splitter, returned, thoughts = feed(["Hello", ", ", "world"])
    assert returned == ["Hello", ", ", "world", ""]
    assert splitter.content == "Hello, world"
    assert splitter.thinking == ""
    assert thoughts == ["", "", "", ""]


def test_think_span_goes_to_thinking_and_answer_to_content() -> None:
    splitter, returned, thoughts = feed(["<think>plan it</think>The answer"])
    assert returned == ["The answer", ""]
    assert splitter.content == "The answer"
    assert splitter.thinking == "plan it"
    assert thoughts[0] == "plan it"


def test_reasoning_deltas_are_reported_live_on_last_thinking() -> None:
    splitter, returned, thoughts = feed(["<think>", "step one ", "step two", "</think>", "done"])
    assert returned == ["", "", "", "", "done", ""]
    assert thoughts == ["", "step one ", "step two", "", "", ""]
    assert splitter.thinking == "step one step two"


def test_open_tag_split_across_deltas_is_held_then_eaten() -> None:
    splitter = create_think_splitter()
    assert splitter.split("Hi <th") == "Hi "
    assert splitter.split("ink>why") == ""
    assert splitter.last_thinking == "why"
    assert splitter.split("</think>ok") == "ok"
    assert splitter.content == "Hi ok"
    assert splitter.thinking == "why"


def test_close_tag_split_across_deltas_is_held_inside_the_span() -> None:
    splitter = create_think_splitter()
    splitter.split("<think>a</")
    assert splitter.thinking == "a"
    splitter.split("thi")
    assert splitter.thinking == "a"
    assert splitter.split("nk>b") == "b"
    assert splitter.thinking == "a"


def test_held_fragment_that_is_not_a_tag_is_released_as_content() -> None:
    splitter = create_think_splitter()
    assert splitter.split("x <thi") == "x "
    assert splitter.split("ng>") == "<thing>"
    assert splitter.content == "x <thing>"


def test_a_lone_less_than_is_held_only_until_the_next_delta() -> None:
    splitter = create_think_splitter()
    assert splitter.split("a <") == "a "
    assert splitter.split(" b") == "< b"
    assert splitter.content == "a < b"


def test_flush_returns_a_never_completed_partial_tag_as_content() -> None:
    splitter = create_think_splitter()
    assert splitter.split("the end <thi") == "the end "
    assert splitter.flush() == "<thi"
    assert splitter.content == "the end <thi"
    assert splitter.thinking == ""


def test_flush_keeps_an_unclosed_span_tail_on_thinking() -> None:
    splitter = create_think_splitter()
    assert splitter.split("ok<think>cut off mid-</thi") == "ok"
    assert splitter.thinking == "cut off mid-"
    assert splitter.flush() == ""
    assert splitter.last_thinking == "</thi"
    assert splitter.thinking == "cut off mid-</thi"
    assert splitter.content == "ok"


def test_flush_twice_returns_nothing_the_second_time() -> None:
    splitter = create_think_splitter()
    splitter.split("a<")
    assert splitter.flush() == "<"
    assert splitter.flush() == ""
    assert splitter.content == "a<"


def test_bare_leading_close_reclassifies_the_surfaced_prefix() -> None:
    splitter = create_think_splitter()
    assert splitter.split("the user wants ") == "the user wants "
    assert splitter.split("a greeting") == "a greeting"
    assert splitter.split("</think>\n\nHello!") == "Hello!"
    assert splitter.last_thinking == "the user wants a greeting"
    assert splitter.content == "Hello!"
    assert splitter.thinking == "the user wants a greeting"


def test_bare_close_in_the_same_delta_never_surfaces_the_reasoning() -> None:
    splitter, returned, _ = feed(["reasoning</think>answer"])
    assert returned == ["answer", ""]
    assert splitter.thinking == "reasoning"


def test_reclassification_is_one_shot_so_a_later_bare_close_is_text() -> None:
    splitter, _, _ = feed(["r</think>", "a </think> b"])
    assert splitter.content == "a </think> b"
    assert splitter.thinking == "r"


def test_a_bare_close_after_a_real_span_is_plain_text() -> None:
    splitter, _, _ = feed(["<think>t</think>x", " </think> y"])
    assert splitter.content == "x </think> y"
    assert splitter.thinking == "t"


def test_a_bare_close_cut_across_deltas_still_reclassifies() -> None:
    splitter = create_think_splitter()
    assert splitter.split("plan</") == "plan"
    assert splitter.split("think>go") == "go"
    assert splitter.last_thinking == "plan"
    assert splitter.thinking == "plan"
    assert splitter.content == "go"


def test_open_tag_inside_a_span_is_reasoning_text() -> None:
    splitter, _, _ = feed(["<think>a <think> b</think>c"])
    assert splitter.thinking == "a <think> b"
    assert splitter.content == "c"


def test_several_spans_accumulate_thinking() -> None:
    splitter, _, _ = feed(["<think>one</think>A<think>two</think>B"])
    assert splitter.thinking == "onetwo"
    assert splitter.content == "AB"


def test_whitespace_after_a_close_is_dropped_once_even_across_deltas() -> None:
    splitter, returned, _ = feed(["<think>t</think>", "\n", "\n  ", "Answer", "\n\nmore"])
    assert "".join(returned) == "Answer\n\nmore"
    assert splitter.content == "Answer\n\nmore"


def test_whitespace_before_any_span_and_inside_reasoning_is_kept() -> None:
    splitter, _, _ = feed(["  hi <think>\n  why\n</think>"])
    assert splitter.content == "  hi "
    assert splitter.thinking == "\n  why\n"


def test_split_rejects_a_non_string_delta() -> None:
    with pytest.raises(TypeError, match="delta"):
        create_think_splitter().split(None)  # type: ignore[arg-type]


# Pieces chosen to hit every tag boundary: whole tags, their prefixes and near misses.
PIECES = st.sampled_from(
    [
        THINK_OPEN,
        THINK_CLOSE,
        "<",
        "</",
        "<t",
        "<thi",
        "</thi",
        "<think",
        "</think",
        "think>",
        "nk>",
        ">",
        "<b>",
        " ",
        "\n\n",
        "a",
        "xyz",
        "é",
    ]
)
TEXTS = st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=14).map("".join)


def cut(text: str, points: list[int]) -> list[str]:
    bounds = sorted({min(p, len(text)) for p in points})
    deltas, last = [], 0
    for bound in bounds:
        deltas.append(text[last:bound])
        last = bound
    deltas.append(text[last:])
    return deltas


def first_tag_is_a_bare_close(text: str) -> bool:
    close_at, open_at = text.find(THINK_CLOSE), text.find(THINK_OPEN)
    return close_at >= 0 and (open_at < 0 or close_at < open_at)


@given(text=TEXTS, points=st.lists(st.integers(min_value=0, max_value=80), max_size=12))
def test_any_cut_gives_the_same_content_and_thinking_as_the_uncut_text(
    text: str, points: list[int]
) -> None:
    whole, whole_returned, whole_thoughts = feed([text])
    split, split_returned, split_thoughts = feed(cut(text, points))

    assert split.content == whole.content
    assert split.thinking == whole.thinking
    # In one delta the returned content is exactly the authoritative content.
    assert "".join(whole_returned) == whole.content
    # The live thinking channel always adds up to the accumulation.
    assert "".join(whole_thoughts) == whole.thinking
    assert "".join(split_thoughts) == split.thinking

    returned = "".join(split_returned)
    if not first_tag_is_a_bare_close(text):
        assert returned == "".join(whole_returned)
    else:
        # Only the implicit open may over-report: by a prefix already surfaced, now thinking.
        over = len(returned) - len(split.content)
        assert over >= 0
        assert returned[over:] == split.content
        assert split.thinking.startswith(returned[:over])
