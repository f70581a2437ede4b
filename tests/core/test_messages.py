import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import (
    Message,
    ToolCall,
    create_message,
    is_message,
    is_tool_call,
    message_to_dict,
)


def test_create_message_mints_id_and_omits_absent_fields():
    message = create_message({"role": "user", "content": "hi"})
    assert message.id and message.calls is None and message.images is None
    assert message_to_dict(message) == {"id": message.id, "role": "user", "content": "hi"}


def test_create_message_coerces_calls_and_images():
    message = create_message(
        {
            "role": "assistant",
            "content": "",
            "calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}],
            "images": ["aGk="],
        }
    )
    assert message.calls == (ToolCall("c1", "add", {"a": 1}),)
    assert message.images == ("aGk=",)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "user", "content": 3}, "content"),
        ({"role": "user", "content": "x", "calls": "nope"}, "calls"),
        ({"role": "user", "content": "x", "calls": [{"id": 1, "name": "a"}]}, "id"),
        ({"role": "user", "content": "x", "images": [1]}, "images"),
        ({"role": "user", "content": "x", "id": 5}, "id"),
    ],
)
def test_create_message_names_the_bad_field(payload, field):
    with pytest.raises((TypeError, ValueError), match=field):
        create_message(payload)


def test_message_is_immutable():
    message = create_message({"role": "user", "content": "hi"})
    with pytest.raises(AttributeError):
        message.content = "changed"


def test_message_dict_round_trips_through_json():
    message = create_message(
        {
            "role": "assistant",
            "content": "x",
            "calls": [{"id": "1", "name": "t", "arguments": {"k": [1, 2]}}],
        }
    )
    data = json.loads(json.dumps(message_to_dict(message)))
    assert create_message(data) == message


def test_guards_accept_dataclasses_and_mappings():
    message = Message("1", "user", "hi")
    assert is_message(message)
    assert is_message({"id": "1", "role": "tool", "content": "{}", "tool_call_id": "c"})
    assert is_tool_call(ToolCall("1", "a", {}))
    assert is_tool_call({"id": "1", "name": "a", "arguments": {}})


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        [],
        {"role": "user", "content": "x"},
        {"id": "1", "role": "user"},
        {"id": "1", "role": "bot", "content": "x"},
        {"id": "1", "role": "user", "content": "x", "calls": {}},
        {"id": "1", "role": "user", "content": "x", "calls": [{"id": "c", "name": "n"}]},
        {"id": "1", "role": "user", "content": "x", "images": "abc"},
        {"id": "1", "role": "user", "content": "x", "images": [None]},
        {"id": "1", "role": "tool", "content": "x", "tool_call_id": 3},
    ],
)
def test_is_message_fails_closed_on_malformed_shapes(value):
    assert is_message(value) is False


@pytest.mark.parametrize(
    "value",
    [
        None,
        {},
        {"id": "1", "name": "a"},
        {"id": 1, "name": "a", "arguments": {}},
        {"id": "1", "name": "a", "arguments": "{}"},
    ],
)
def test_is_tool_call_fails_closed(value):
    assert is_tool_call(value) is False


class Exploding(dict):
    def get(self, *args):
        raise RuntimeError("hostile mapping")


def test_guards_never_raise_on_hostile_input():
    assert is_message(Exploding()) is False
    assert is_tool_call(Exploding()) is False


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=10,
    )
)
def test_guards_are_total(value):
    assert is_message(value) in (True, False)
    assert is_tool_call(value) in (True, False)
