"""The shared wire helpers: framing decoders under any byte split, and the mapping helpers."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core.messages import create_message
from orkestrel.core.provider import ProviderStreamOptions, ToolDefinition
from orkestrel.providers.wire import (
    MAX_LINE_BYTES,
    LineTooLong,
    NDJSONDecoder,
    SSEDecoder,
    ToolLink,
    decode_json,
    link_tool_messages,
    parse_arguments,
    scrub_text,
    to_image,
    to_options,
    to_tools,
)

SSE_BODY = (
    b": comment\n"
    b"event: message_start\r\n"
    b'data: {"a": "caf\xc3\xa9"}\r\n'
    b"\r\n"
    b"id: 7\n"
    b"data:first\n"
    b"data: second\n"
    b"\n"
    b"retry: 10\n"
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)
SSE_EVENTS = [b'{"a": "caf\xc3\xa9"}', b"first\nsecond", b"[DONE]"]


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    return [body[a:b] for a, b in zip(points, points[1:], strict=False)]


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_sse_events_are_the_same_however_the_body_is_cut(cuts: list[int]) -> None:
    decoder = SSEDecoder()
    events = [event for piece in split(SSE_BODY, cuts) for event in decoder.feed(piece)]
    assert events + decoder.flush() == SSE_EVENTS


def test_sse_flush_delivers_a_last_event_missing_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: one\n\ndata: two") == [b"one"]
    assert decoder.flush() == [b"two"]
    assert decoder.flush() == []


NDJSON_BODY = b'{"a": 1}\n\n{"b": "\xe2\x82\xac"}\r\n   \n{"c": 3}'


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_ndjson_lines_are_the_same_however_the_body_is_cut(cuts: list[int]) -> None:
    decoder = NDJSONDecoder()
    lines = [line for piece in split(NDJSON_BODY, cuts) for line in decoder.feed(piece)]
    assert lines + decoder.flush() == [b'{"a": 1}', b'{"b": "\xe2\x82\xac"}\r', b'{"c": 3}']


@pytest.mark.parametrize(
    ("value", "media_type", "data"),
    [
        ("iVBORw0KGgoAAA", "image/png", "iVBORw0KGgoAAA"),
        ("/9j/4AAQ", "image/jpeg", "/9j/4AAQ"),
        ("R0lGODlh", "image/gif", "R0lGODlh"),
        ("UklGRiQ", "image/webp", "UklGRiQ"),
        ("AAAA", "image/png", "AAAA"),
        ("data:image/jpeg;base64,/9j/x", "image/jpeg", "/9j/x"),
    ],
)
def test_images_are_sniffed_or_taken_from_their_data_url(
    value: str, media_type: str, data: str
) -> None:
    image = to_image(value)
    assert (image.media_type, image.data) == (media_type, data)
    assert image.url == f"data:{media_type};base64,{data}"


def test_tool_messages_pair_by_id_then_by_order_and_stray_ones_stay_unlinked() -> None:
    messages = [
        create_message(m)
        for m in [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "calls": [
                    {"id": "a", "name": "one", "arguments": {}},
                    {"id": "b", "name": "two", "arguments": {}},
                    {"id": "c", "name": "three", "arguments": {}},
                ],
            },
            {"role": "tool", "content": "B", "tool_call_id": "b"},
            {"role": "tool", "content": "A?"},
            {"role": "tool", "content": "C?"},
            {"role": "tool", "content": "extra"},
            {"role": "tool", "content": "unknown", "tool_call_id": "zzz"},
        ]
    ]
    assert link_tool_messages(messages) == {
        2: ToolLink("b", "two"),
        3: ToolLink("a", "one"),
        4: ToolLink("c", "three"),
        5: ToolLink(None, None),
        6: ToolLink("zzz", None),
    }


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        (None, {}),
        ("", {}),
        ("  ", {}),
        ('{"a": [1, 2]}', {"a": [1, 2]}),
        ('"{\\"a\\": 1}"', {"a": 1}),
        ({"k": "v"}, {"k": "v"}),
        ("[1, 2]", None),
        ("{broken", None),
        ('"just text"', None),
    ],
)
def test_arguments_parse_to_an_object_or_none(raw: object, parsed: object) -> None:
    assert parse_arguments(raw) == parsed  # type: ignore[arg-type]


def test_options_accept_a_mapping_or_the_dataclass_and_check_think() -> None:
    assert to_options(None) == ProviderStreamOptions()
    assert to_options({"think": "low"}) == ProviderStreamOptions(think="low")
    chosen = ProviderStreamOptions(think=True, schema={"type": "object"})
    assert to_options(chosen) is chosen
    with pytest.raises(ValueError, match=r"options\.think"):
        to_options({"think": "turbo"})
    with pytest.raises(TypeError, match=r"options\.schema"):
        to_options({"schema": "object"})
    with pytest.raises(TypeError, match="options"):
        to_options(3)  # type: ignore[arg-type]


def test_tools_accept_definitions_or_mappings() -> None:
    assert to_tools(None) == []
    assert to_tools([{"name": "f", "description": "d"}, ToolDefinition("g")]) == [
        ToolDefinition("f", "d"),
        ToolDefinition("g"),
    ]
    with pytest.raises(TypeError, match="tools"):
        to_tools([{"description": "nameless"}])


# -- hostile wire: line caps, linear buffering, lone surrogates -----------------------------------


def test_the_default_line_cap_is_one_mebibyte() -> None:
    assert MAX_LINE_BYTES == 1048576
    assert SSEDecoder().max_line == NDJSONDecoder().max_line == MAX_LINE_BYTES


@pytest.mark.parametrize("decoder", [SSEDecoder, NDJSONDecoder])
def test_a_line_at_the_cap_passes_and_one_byte_more_is_refused(decoder: type[SSEDecoder]) -> None:
    line = b"data:" + b"x" * 5  # 10 bytes
    assert decoder(max_line=10).feed(line + b"\n\n") in ([b"xxxxx"], [line])
    with pytest.raises(LineTooLong, match="provider sent a line longer than 9 bytes"):
        decoder(max_line=9).feed(line + b"\n\n")
    held = decoder(max_line=10)
    assert held.feed(line) == []  # an unfinished line at the cap is still held
    with pytest.raises(LineTooLong, match="longer than 10 bytes"):
        held.feed(b"x")


@pytest.mark.parametrize("decoder", [SSEDecoder, NDJSONDecoder])
def test_an_endless_line_is_refused_once_it_outgrows_the_cap(decoder: type[SSEDecoder]) -> None:
    endless = decoder()
    with pytest.raises(LineTooLong, match="line longer than 1048576 bytes"):
        for _ in range(32 * 1024):  # 32 MiB, never a newline
            endless.feed(b"a" * 1024)


def test_an_sse_event_whose_data_lines_outgrow_the_cap_is_refused() -> None:
    decoder = SSEDecoder(max_line=100)
    with pytest.raises(LineTooLong, match="provider sent an event longer than 100 bytes"):
        for _ in range(100):
            decoder.feed(b"data: 0123456789\n")  # short lines, but no blank line ever


@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_a_bad_line_cap_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="max_line"):
        SSEDecoder(max_line=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("decoder", "head", "end", "out"),
    [(SSEDecoder, b"data: ", b"\n\n", b""), (NDJSONDecoder, b"", b"\n", b"")],
)
def test_a_5_mb_line_in_10_000_chunks_decodes_in_linear_time(
    decoder: type[SSEDecoder], head: bytes, end: bytes, out: bytes
) -> None:
    piece = b"y" * 500
    chosen = decoder(max_line=8 << 20)
    started = time.perf_counter()
    events = chosen.feed(head)
    for _ in range(10_000):
        events += chosen.feed(piece)
    events += chosen.feed(end) + chosen.flush()
    elapsed = time.perf_counter() - started
    assert events == [piece * 10_000]
    assert elapsed < 0.5, f"decoding took {elapsed:.2f}s: the buffer is rescanned per chunk"


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_a_tight_cap_still_decodes_the_same_however_the_body_is_cut(cuts: list[int]) -> None:
    decoder = SSEDecoder(max_line=max(len(line) for line in SSE_BODY.split(b"\n")))
    events = [event for piece in split(SSE_BODY, cuts) for event in decoder.feed(piece)]
    assert events + decoder.flush() == SSE_EVENTS


@pytest.mark.parametrize(
    ("payload", "value"),
    [
        (b'{"t": "a\\ud83db"}', {"t": "a\ufffdb"}),
        (b'{"t": "\\uDE00"}', {"t": "\ufffd"}),
        (b'{"t": "\xed\xa0\xbd"}', {"t": "\ufffd"}),
        (b'{"\\ud83d": ["\\ud83d", {"k": "\\udc00!"}]}', {"\ufffd": ["\ufffd", {"k": "\ufffd!"}]}),
        (b'{"t": "\\ud83d\\ude00"}', {"t": "\U0001f600"}),  # a whole pair is kept
        (b'{"t": "\\\\ud83d"}', {"t": "\\ud83d"}),  # an escaped backslash is plain text
        ('{"t": "\\ud83d"}', {"t": "\ufffd"}),
    ],
)
def test_decode_json_replaces_each_lone_surrogate(payload: bytes | str, value: object) -> None:
    decoded = decode_json(payload)
    assert decoded == value
    json.dumps(decoded, ensure_ascii=False).encode()


def test_scrub_text_keeps_clean_text_as_is() -> None:
    clean = "caf\u00e9 \U0001f600"
    assert scrub_text(clean) is clean
    assert scrub_text("a\ud83d\udc00b") == "a\ufffd\ufffdb"  # two halves, two replacements


def test_tool_arguments_with_a_lone_surrogate_parse_to_the_replacement() -> None:
    assert parse_arguments('{"q": "\\ud83d"}') == {"q": "\ufffd"}
    assert parse_arguments(json.dumps('{"q": "\\ud83d"}')) == {"q": "\ufffd"}
    assert parse_arguments('{"q": "\ud83d"}') == {"q": "\ufffd"}
