import base64
import copy
import json
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import (
    BinaryContent,
    TextContent,
    compute_size,
    count_lines,
    create_binary_content,
    create_file,
    create_text_content,
    decoded_size,
    file_from_dict,
    file_to_dict,
    is_binary,
    is_file,
    is_image,
    is_text,
    to_files,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR").decode()


class ExplodingMapping(Mapping):
    """A hostile mapping whose every access raises: the guards must still answer."""

    def __getitem__(self, key):
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


# --- content arms -------------------------------------------------------------------------


def test_create_text_content_defaults_language_to_text():
    content = create_text_content("hello")
    assert content == TextContent("hello", "text")
    assert is_text(content) and not is_binary(content)


def test_create_text_content_keeps_given_language():
    assert create_text_content("x = 1", "python").language == "python"


def test_create_binary_content_builds_the_binary_arm():
    content = create_binary_content(PNG, "image/png")
    assert content == BinaryContent(PNG, "image/png")
    assert is_binary(content) and not is_text(content)


@pytest.mark.parametrize(
    ("build", "error", "field"),
    [
        (lambda: create_text_content(3), TypeError, "text"),
        (lambda: create_text_content("x", ""), ValueError, "language"),
        (lambda: create_text_content("x", 5), TypeError, "language"),
        (lambda: create_binary_content(b"AAAA", "image/png"), TypeError, "data"),
        (lambda: create_binary_content("not base64!", "image/png"), ValueError, "data"),
        (lambda: create_binary_content("AAA", "image/png"), ValueError, "data"),
        (lambda: create_binary_content("A=AA", "image/png"), ValueError, "data"),
        (lambda: create_binary_content("AAAA", "application/pdf"), ValueError, "mime"),
    ],
)
def test_content_constructors_name_the_bad_field(build, error, field):
    with pytest.raises(error, match=field):
        build()


def test_content_arms_are_frozen():
    content = create_text_content("a")
    with pytest.raises(FrozenInstanceError):
        content.text = "b"


# --- guards -------------------------------------------------------------------------------


def test_guards_accept_plain_mappings():
    assert is_text({"text": "a", "language": "text"})
    assert is_binary({"data": PNG, "mime": "image/jpeg"})
    assert is_image({"data": PNG, "mime": "image/webp"})


def test_is_image_is_true_for_every_image_mime_and_false_for_text():
    for mime in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        assert is_image(create_binary_content(PNG, mime))
    assert not is_image(create_text_content("a"))


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        42,
        [],
        {},
        {"text": 1, "language": "text"},
        {"text": "a"},
        {"text": "a", "language": ""},
        {"data": "AAAA"},
        {"data": "AAAA", "mime": "application/pdf"},
        {"data": "@@@@", "mime": "image/png"},
        {"data": 5, "mime": "image/png"},
        ExplodingMapping(),
    ],
)
def test_content_guards_reject_malformed_shapes_without_raising(value):
    assert not is_text(value)
    assert not is_binary(value)
    assert not is_image(value)


# --- derived metadata ---------------------------------------------------------------------


def test_compute_size_counts_utf8_bytes_of_text():
    assert compute_size(create_text_content("café")) == 5
    assert compute_size(create_text_content("日本")) == 6
    assert compute_size(create_text_content("")) == 0


def test_compute_size_counts_decoded_bytes_of_binary():
    assert compute_size(create_binary_content(PNG, "image/png")) == 16


def test_compute_size_is_total():
    assert compute_size(create_text_content("\ud800")) == 3
    assert compute_size(None) == 0
    assert compute_size({"bogus": True}) == 0


@pytest.mark.parametrize(
    ("text", "lines"),
    [("", 0), ("one", 1), ("a\nb", 2), ("a\nb\nc", 3), ("trailing\n", 2), ("\n", 2)],
)
def test_count_lines_is_newlines_plus_one_except_empty(text, lines):
    assert count_lines(create_text_content(text)) == lines


def test_count_lines_of_binary_or_garbage_is_zero():
    assert count_lines(create_binary_content(PNG, "image/png")) == 0
    assert count_lines(object()) == 0


@pytest.mark.parametrize(
    ("data", "size"), [("", 0), ("AAAA", 3), ("AAA=", 2), ("AA==", 1), ("AAAAAA==", 4)]
)
def test_decoded_size_reads_length_and_padding(data, size):
    assert decoded_size(data) == size


def test_decoded_size_is_total_and_never_negative():
    assert decoded_size("=") == 0
    assert decoded_size(None) == 0
    assert decoded_size(12) == 0


@given(st.binary(max_size=300))
def test_decoded_size_matches_real_encoded_payloads(payload):
    assert decoded_size(base64.b64encode(payload).decode()) == len(payload)


# --- File ---------------------------------------------------------------------------------


def test_create_file_is_a_frozen_record_with_derived_fields_and_no_id():
    file = create_file("notes/a.md", create_text_content("# T\nbody", "markdown"))
    assert (file.path, file.state, file.size, file.lines) == ("notes/a.md", "created", 8, 2)
    assert not hasattr(file, "id")
    assert not hasattr(file, "__dict__")
    with pytest.raises(FrozenInstanceError):
        file.size = 0


def test_create_file_keeps_an_explicit_state():
    assert create_file("a.txt", create_text_content("x"), "modified").state == "modified"


def test_create_file_derives_size_and_lines_for_binary():
    file = create_file("logo.png", create_binary_content(PNG, "image/png"))
    assert (file.size, file.lines) == (16, 0)


def test_create_file_accepts_a_file_input_mapping_and_rederives_metadata():
    file = create_file(
        {"path": "a.txt", "content": {"text": "a\nb", "language": "text"}, "size": 999}
    )
    assert file == create_file("a.txt", create_text_content("a\nb"))
    assert (file.size, file.lines) == (3, 2)


def test_copies_of_a_file_are_equal_in_every_field():
    file = create_file("logo.png", create_binary_content(PNG, "image/gif"), "loaded")
    assert copy.deepcopy(file) == file
    assert pickle.loads(pickle.dumps(file)) == file


@pytest.mark.parametrize(
    ("args", "error", "field"),
    [
        (("", create_text_content("x")), ValueError, "path"),
        (("a\x00b", create_text_content("x")), ValueError, "path"),
        ((7, create_text_content("x")), TypeError, "path"),
        (("a.txt", create_text_content("x"), "archived"), ValueError, "state"),
        (("a.txt", None), TypeError, "content"),
        (("a.txt", "plain string"), TypeError, "content"),
        (("a.txt", {"neither": 1}), TypeError, "content"),
        (({"path": "a.txt"},), TypeError, "content"),
    ],
)
def test_create_file_names_the_bad_field(args, error, field):
    with pytest.raises(error, match=field):
        create_file(*args)


def test_file_dict_round_trips_through_json_for_text_and_binary():
    for file in (
        create_file("a.py", create_text_content("x = 1\n", "python"), "modified"),
        create_file("b.png", create_binary_content(PNG, "image/png")),
    ):
        data = file_to_dict(file)
        assert json.loads(json.dumps(data)) == data
        assert file_from_dict(json.loads(json.dumps(data))) == file


def test_file_from_dict_rejects_a_non_mapping():
    with pytest.raises(TypeError, match="file"):
        file_from_dict(["a.txt"])


def test_is_file_accepts_a_file_and_its_json_dict():
    file = create_file("a.txt", create_text_content("hi"))
    assert is_file(file)
    assert is_file(json.loads(json.dumps(file_to_dict(file))))
    assert is_file(file_to_dict(create_file("b.png", create_binary_content(PNG, "image/png"))))


GOOD = {"path": "a.txt", "content": {"text": "hi", "language": "text"}, "state": "created"}


@pytest.mark.parametrize(
    "value",
    [
        None,
        "a.txt",
        [GOOD],
        {**GOOD},  # no size / lines
        {**GOOD, "size": 2},
        {**GOOD, "size": "2", "lines": 1},
        {**GOOD, "size": True, "lines": 1},
        {**GOOD, "size": -1, "lines": 1},
        {**GOOD, "size": 2, "lines": 1.0},
        {**GOOD, "size": 2, "lines": 1, "path": ""},
        {**GOOD, "size": 2, "lines": 1, "path": 3},
        {**GOOD, "size": 2, "lines": 1, "state": "gone"},
        {**GOOD, "size": 2, "lines": 1, "content": "hi"},
        {**GOOD, "size": 2, "lines": 1, "content": {"text": "hi"}},
        {**GOOD, "size": 2, "lines": 1, "content": {"data": "!!", "mime": "image/png"}},
        ExplodingMapping(),
    ],
)
def test_is_file_rejects_malformed_shapes_without_raising(value):
    assert is_file(value) is False


# --- to_files -----------------------------------------------------------------------------


def test_to_files_accepts_files_dicts_pairs_and_mappings():
    text = create_file("a.txt", create_text_content("a"))
    binary = create_file("b.png", create_binary_content(PNG, "image/png"))
    assert to_files([text, file_to_dict(binary)]) == (text, binary)
    assert to_files([("a.txt", text)]) == (text,)
    assert to_files({"b.png": file_to_dict(binary)}) == (binary,)


def test_to_files_rekeys_a_file_to_its_pair_path():
    (file,) = to_files([("renamed.txt", create_file("a.txt", create_text_content("a")))])
    assert file.path == "renamed.txt" and file.content.text == "a"


@pytest.mark.parametrize("value", ["abc", 5, [5], [("a.txt", "text")], [("a.txt",)]])
def test_to_files_rejects_what_is_not_a_file(value):
    with pytest.raises(TypeError):
        to_files(value)
