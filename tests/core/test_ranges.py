import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import (
    Position,
    Range,
    clamp_position,
    clamp_range,
    is_valid_range,
    offset_at,
    range_of,
    slice_range,
    splice_range,
    to_range,
)

TEXT = "hello\nworld!\n\nend"


def test_range_of_lifts_the_four_ints_verbatim():
    assert range_of(1, 2, 3, 4) == Range(Position(1, 2), Position(3, 4))
    # No validation: an inverted, sub-1 range is lifted as given.
    assert range_of(5, 0, 2, -1) == Range(Position(5, 0), Position(2, -1))


def test_to_range_coerces_a_nested_mapping():
    value = {"start": {"line": 1, "column": 2}, "end": {"line": 3, "column": 4}}
    assert to_range(value) == range_of(1, 2, 3, 4)
    assert to_range(value).to_dict() == value


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("1:1-1:2", "range"),
        ({"start": {"line": 1, "column": 1}}, "range.end"),
        ({"start": {"line": "1", "column": 1}, "end": {"line": 1, "column": 1}}, "start.line"),
        ({"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": True}}, "end.column"),
    ],
)
def test_to_range_names_the_bad_field(value, field):
    with pytest.raises(TypeError, match=field):
        to_range(value)


@pytest.mark.parametrize(
    "value",
    [
        range_of(1, 1, 1, 1),
        range_of(1, 1, 1, 2),
        range_of(1, 9, 2, 1),
        range_of(100, 100, 200, 1),
        {"start": {"line": 1, "column": 1}, "end": {"line": 2, "column": 1}},
    ],
)
def test_is_valid_range_accepts_ordered_one_based_ranges(value):
    assert is_valid_range(value)


@pytest.mark.parametrize(
    "value",
    [
        range_of(2, 1, 1, 1),
        range_of(1, 3, 1, 2),
        range_of(0, 1, 1, 1),
        range_of(1, 0, 1, 1),
        range_of(1, 1, 1, -4),
        range_of(1, 1.0, 1, 2),
        range_of(True, 1, 1, 2),
        None,
        "range",
        {},
        {"start": {"line": 1, "column": 1}},
        {"start": None, "end": None},
    ],
)
def test_is_valid_range_rejects_inverted_sub_one_and_malformed_ranges(value):
    assert is_valid_range(value) is False


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        (Position(1, 1), Position(1, 1)),
        (Position(2, 3), Position(2, 3)),
        (Position(1, 99), Position(1, 6)),
        (Position(99, 99), Position(4, 4)),
        (Position(0, -5), Position(1, 1)),
        (Position(3, 7), Position(3, 1)),
        ({"line": 2, "column": 7}, Position(2, 7)),
    ],
)
def test_clamp_position_pins_into_an_existing_caret(position, expected):
    assert clamp_position(TEXT, position) == expected


def test_clamp_position_in_empty_text_is_the_only_caret():
    assert clamp_position("", Position(5, 5)) == Position(1, 1)


def test_clamp_range_trims_past_the_end():
    assert clamp_range("ab", range_of(1, 2, 9, 9)) == range_of(1, 2, 1, 3)


def test_clamp_range_collapses_an_inverted_range_to_its_start():
    assert clamp_range(TEXT, range_of(2, 3, 1, 2)) == range_of(2, 3, 2, 3)


@pytest.mark.parametrize(
    ("position", "offset"),
    [(Position(1, 1), 0), (Position(1, 6), 5), (Position(2, 1), 6), (Position(4, 4), 17)],
)
def test_offset_at_converts_to_a_zero_based_offset(position, offset):
    assert offset_at(TEXT, position) == offset


def test_offset_at_is_capped_at_the_text_length():
    assert offset_at(TEXT, Position(50, 50)) == len(TEXT)
    assert offset_at("", Position(3, 3)) == 0


def test_slice_range_is_start_inclusive_end_exclusive():
    assert slice_range(TEXT, range_of(1, 1, 1, 6)) == "hello"
    assert slice_range(TEXT, range_of(1, 5, 2, 3)) == "o\nwo"


def test_slice_range_clamps_past_the_end():
    assert slice_range(TEXT, range_of(4, 2, 9, 9)) == "nd"


def test_slice_range_of_an_empty_span_is_empty():
    assert slice_range(TEXT, range_of(2, 2, 2, 2)) == ""


def test_splice_range_replaces_the_span():
    assert splice_range("const x = 1", range_of(1, 11, 1, 12), "0") == "const x = 0"
    assert splice_range(TEXT, range_of(1, 1, 2, 7), "hi") == "hi\n\nend"


def test_splice_range_with_an_empty_span_inserts():
    assert splice_range("ac", range_of(1, 2, 1, 2), "b") == "abc"


def test_splice_range_past_the_end_appends():
    assert splice_range("ab", range_of(7, 7, 9, 9), "!") == "ab!"


@pytest.mark.parametrize("garbage", [None, 3, "x", {"start": "a", "end": []}, object()])
def test_range_helpers_tolerate_garbage_ranges(garbage):
    assert is_valid_range(garbage) is False
    assert clamp_range("abc", garbage) == range_of(1, 1, 1, 1)
    assert slice_range("abc", garbage) == ""
    assert splice_range("abc", garbage, "!") == "!abc"
    assert clamp_position("abc", garbage) == Position(1, 1)
    assert offset_at("abc", garbage) == 0


def test_range_helpers_tolerate_a_non_string_text():
    assert slice_range(None, range_of(1, 1, 1, 2)) == ""
    assert splice_range(42, range_of(1, 1, 1, 2), "x") == "x"


components = st.one_of(
    st.integers(min_value=-5, max_value=60),
    st.integers(),
    st.none(),
    st.text(max_size=2),
    st.floats(allow_nan=True),
    st.booleans(),
)
texts = st.text(alphabet=st.sampled_from("ab\n\r é"), max_size=40) | st.text(max_size=20)
ranges = st.one_of(
    st.builds(range_of, components, components, components, components),
    st.fixed_dictionaries(
        {
            "start": st.fixed_dictionaries({"line": components, "column": components}),
            "end": st.fixed_dictionaries({"line": components, "column": components}),
        }
    ),
    st.none(),
    st.text(max_size=3),
)


@given(texts, ranges, st.text(max_size=5))
def test_range_helpers_never_raise(text, value, replacement):
    is_valid_range(value)
    clamp_range(text, value)
    slice_range(text, value)
    splice_range(text, value, replacement)
    clamp_position(text, getattr(value, "start", value))
    offset_at(text, getattr(value, "end", value))


@given(texts, ranges)
def test_splicing_a_slice_back_in_restores_the_text(text, value):
    assert splice_range(text, value, slice_range(text, value)) == text


@given(texts, ranges)
def test_a_clamped_range_is_valid_and_slices_the_same(text, value):
    clamped = clamp_range(text, value)
    assert is_valid_range(clamped)
    assert clamp_range(text, clamped) == clamped
    assert slice_range(text, clamped) == slice_range(text, value)
    start, end = offset_at(text, clamped.start), offset_at(text, clamped.end)
    assert 0 <= start <= end <= len(text)
    assert slice_range(text, value) == text[start:end]
