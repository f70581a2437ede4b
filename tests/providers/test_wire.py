"""The shared wire helpers: framing decoders under any byte split, and the mapping helpers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core.messages import create_message
from orkestrel.core.provider import ProviderStreamOptions, ToolDefinition
from orkestrel.providers.wire import (
    NDJSONDecoder,
    SSEDecoder,
    ToolLink,
    link_tool_messages,
    parse_arguments,
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
