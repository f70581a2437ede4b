"""A server's form (elicitation's ``requestedSchema``) read into the chat's fields, an answer
checked against them, and the run's bridge refusing what the chat must not show."""

from __future__ import annotations

import mcp_types as types
import pytest

from agents.mcp.input_forms import AnswerInvalid, FormUnsupported, checked_answer, form_fields
from agents.runtime.mcp_input import InputBridge

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email", "default": "ada@example.com"},
        "when": {"type": "string", "format": "date-time"},
        "size": {"type": "number", "minimum": 0.5},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
            "default": "g",
        },
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Apple", "Banana"]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["x", "y", "z"]},
            "maxItems": 2,
        },
        "agree": {"type": "boolean", "default": "yes"},
    },
    "required": ["name", "tags"],
}


def test_every_kind_the_spec_allows_becomes_a_field_with_its_labels_limits_and_defaults():
    fields = {field["name"]: field for field in form_fields(SCHEMA)}
    assert [(f["kind"], f["label"], f["required"]) for f in fields.values()] == [
        ("text", "Name", True),
        ("text", "email", False),
        ("text", "when", False),
        ("number", "size", False),
        ("choice", "colour", False),
        ("choice", "legacy", False),
        ("choices", "tags", True),
        ("boolean", "agree", False),
    ]
    assert (fields["name"]["min_length"], fields["name"]["max_length"]) == (2, 5)
    assert (fields["email"]["format"], fields["email"]["default"]) == ("email", "ada@example.com")
    assert fields["size"]["minimum"] == 0.5
    assert fields["colour"]["options"] == [
        {"value": "r", "label": "Red"},
        {"value": "g", "label": "Green"},
    ]
    assert fields["colour"]["default"] == "g"
    assert [o["label"] for o in fields["legacy"]["options"]] == ["Apple", "Banana"]
    assert fields["tags"]["max_items"] == 2
    # A default that does not fit its field is no default.
    assert fields["agree"]["default"] is None


def test_an_answer_that_fits_is_kept_and_blank_optional_fields_are_dropped():
    fields = form_fields(SCHEMA)
    answer = {"name": "Ada", "email": "", "when": "2026-08-01T10:00", "tags": ["x"], "size": 1}
    assert checked_answer(fields, answer) == {
        "name": "Ada",
        "when": "2026-08-01T10:00",
        "tags": ["x"],
        "size": 1,
    }


def test_an_answer_that_does_not_fit_names_every_field_at_fault():
    fields = form_fields(SCHEMA)
    with pytest.raises(AnswerInvalid) as caught:
        checked_answer(
            fields,
            {
                "name": "A",
                "email": "nobody",
                "when": "soon",
                "size": True,
                "colour": "b",
                "tags": ["x", "y", "z"],
                "agree": "yes",
                "extra": 1,
            },
        )
    assert caught.value.problems == (
        "'extra' is not a field of this form",
        "'Name' needs at least 2 characters",
        "'email' must be an email address",
        "'when' must be a date-time (ISO 8601)",
        "'size' must be a number",
        "'colour' must be one of ['r', 'g']",
        "'tags' takes at most 2 choices",
        "'agree' must be true or false",
    )
    with pytest.raises(AnswerInvalid, match="'Name' is required; 'tags' is required"):
        checked_answer(fields, {})


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "array"}, "must be a JSON object schema"),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, "field 'a' must be"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": [1]}}}, "not strings"),
        ({"type": "object", "properties": {}, "required": ["b"]}, "unknown fields: ['b']"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}},
            "unknown format 'ipv4'",
        ),
    ],
)
def test_a_schema_outside_what_the_spec_allows_is_refused(schema, problem):
    with pytest.raises(FormUnsupported, match=problem.replace("[", r"\[").replace("]", r"\]")):
        form_fields(schema)


async def test_the_bridge_refuses_a_page_that_is_not_on_the_web_and_declines_with_nobody_to_ask():
    bridge = InputBridge("c1", 1, timeout=5)
    page = types.ElicitRequestURLParams(message="Go", url="javascript:alert(1)", elicitation_id="e")
    # Not attached to a run: nobody to ask.
    assert await bridge.ask("s", page) == types.ElicitResult(action="decline")
    shown: list[object] = []
    bridge.attach(7, lambda requests, settled: shown.append((requests, settled)))
    refused = await bridge.ask("s", page)
    assert isinstance(refused, types.ErrorData) and "http(s)" in refused.message
    assert shown == []
