"""The wire protocol module against the README's tables, and its one serializer."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from orkestrel.protocol import (
    CLIENT_FRAMES,
    SERVER_FRAMES,
    ClientAbort,
    ClientSend,
    ErrorFrame,
    FrameError,
    Limits,
    TokenFrame,
    encode,
    encode_text,
    parse_client_frame,
)

README = Path(__file__).resolve().parents[2] / "README.md"


def _table(heading: str) -> dict[str, set[str]]:
    """The frame types of one README protocol table, with the field names each row lists."""
    text = README.read_text()
    start = text.index(heading)
    rows: dict[str, set[str]] = {}
    for line in text[start:].splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        kind = cells[0].strip("`")
        names = set(re.findall(r"`([a-z_]+)`", cells[1])) - {"null"}
        rows[kind] = names
    return rows


def _fields(frame: type) -> set[str]:
    return {field.name for field in dataclasses.fields(frame)} - {"type"}


@pytest.mark.parametrize(
    ("heading", "frames"),
    [("Client → server:", CLIENT_FRAMES), ("Server → client:", SERVER_FRAMES)],
)
def test_readme_tables_list_exactly_the_frames_and_fields_of_the_protocol(heading, frames):
    documented = _table(heading)
    assert set(documented) == set(frames)
    for kind, frame in frames.items():
        assert documented[kind] == _fields(frame), kind


def test_every_frame_class_declares_its_own_type_literal():
    for kind, frame in {**CLIENT_FRAMES, **SERVER_FRAMES}.items():
        assert frame.__dataclass_fields__["type"].default == kind


def test_encode_puts_type_first_and_drops_an_error_frames_missing_run():
    assert list(encode(TokenFrame(run=3, seq=9, content="hé"))) == ["type", "run", "seq", "content"]
    assert encode(ErrorFrame(code="busy", message="m")) == {
        "type": "error",
        "code": "busy",
        "message": "m",
    }
    assert json.loads(encode_text(TokenFrame(run=1, seq=1, content="hé")))["content"] == "hé"


@pytest.mark.parametrize(
    "text", ['{"type": ["send"]}', '{"type": {"a": 1}}', '{"type": 7}', '{"type": null}']
)
def test_a_type_that_is_not_a_string_is_an_unknown_type_not_a_crash(text):
    with pytest.raises(FrameError) as caught:
        parse_client_frame(text)
    assert caught.value.code == "unknown_type"


def test_client_frames_parse_into_their_typed_classes():
    assert parse_client_frame('{"type": "abort"}') == ClientAbort()
    send = parse_client_frame('{"type": "send", "content": "hi", "nonce": "n1"}')
    assert send == ClientSend(content="hi", nonce="n1")
    with pytest.raises(FrameError, match="longer than 3 characters"):
        parse_client_frame('{"type": "send", "content": "four"}', Limits(max_message_chars=3))
