"""A server's form (MCP elicitation's ``requestedSchema``): its fields, and the user's answer
checked against them.

The spec restricts the schema to a flat object whose properties are primitives: a string
(optionally ``email``, ``uri``, ``date`` or ``date-time``, with length limits), a number or an
integer (with bounds), a boolean, a single choice (``enum``, or ``oneOf`` of ``const`` and
``title``; the older ``enumNames`` too) or several choices (an ``array`` of such ``items``).
``form_fields`` reads one into ``InputFieldPayload``s (what the chat draws) and refuses anything
else; ``checked_answer`` refuses an answer that does not fit, naming every field at fault, so
nothing the server did not ask for reaches it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from orkestrel.protocol import InputFieldKind, InputFieldPayload, InputOptionPayload

__all__ = ["AnswerInvalid", "FormUnsupported", "checked_answer", "form_fields"]

MAX_FIELDS = 50
MAX_OPTIONS = 200
FORMATS = ("email", "uri", "date", "date-time")
# Enough to catch a slip (a missing ``@``, a space); the server has the last word.
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")

Value = str | int | float | bool | list[str]


class FormUnsupported(ValueError):
    """A ``requestedSchema`` outside what the spec allows (nested, or of another type)."""


class AnswerInvalid(ValueError):
    """An answer that does not fit the form: ``problems`` names each field at fault."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("the answer does not fit the form: " + "; ".join(problems))
        self.problems = tuple(problems)


def form_fields(schema: Mapping[str, Any]) -> list[InputFieldPayload]:
    """The fields of ``schema``, in its order; ``FormUnsupported`` saying what is wrong."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise FormUnsupported("requestedSchema must be a JSON object schema")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or len(properties) > MAX_FIELDS:
        raise FormUnsupported(f"requestedSchema needs properties (at most {MAX_FIELDS})")
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise FormUnsupported("requestedSchema's required must list property names")
    unknown = set(required) - set(properties)
    if unknown:
        raise FormUnsupported(f"requestedSchema requires unknown fields: {sorted(unknown)}")
    return [_field(str(name), spec, name in required) for name, spec in properties.items()]


def checked_answer(
    fields: Sequence[InputFieldPayload], content: Mapping[str, Any] | None
) -> dict[str, Value]:
    """``content`` as the server gets it (fields left blank dropped); ``AnswerInvalid`` when a
    value has the wrong type or breaks a limit, a required field is missing, or a field is not
    the form's."""
    content = content or {}
    named = {field["name"]: field for field in fields}
    problems = [f"{name!r} is not a field of this form" for name in content if name not in named]
    answer: dict[str, Value] = {}
    for name, field in named.items():
        raw = content.get(name)
        if raw is None or (raw == "" and field["kind"] == "text"):
            if field["required"]:
                problems.append(f"{field['label']!r} is required")
            continue
        try:
            answer[name] = _value(field, raw)
        except ValueError as error:
            problems.append(f"{field['label']!r} {error}")
    if problems:
        raise AnswerInvalid(problems)
    return answer


# -- reading the schema ------------------------------------------------------------------------


def _field(name: str, spec: Any, required: bool) -> InputFieldPayload:
    if not isinstance(spec, Mapping):
        raise FormUnsupported(f"field {name!r} must be a schema object")
    kind, options = _kind(name, spec)
    field: InputFieldPayload = {
        "name": name,
        "kind": kind,
        "label": _text(spec.get("title")) or name,
        "description": _text(spec.get("description")),
        "required": required,
        "default": None,
        "options": options,
        "format": None,
        "minimum": _number(spec.get("minimum")),
        "maximum": _number(spec.get("maximum")),
        "min_length": _count(spec.get("minLength")),
        "max_length": _count(spec.get("maxLength")),
        "min_items": _count(spec.get("minItems")),
        "max_items": _count(spec.get("maxItems")),
    }
    if kind == "text":
        shape = spec.get("format")
        if shape is not None and shape not in FORMATS:
            raise FormUnsupported(f"field {name!r} has an unknown format {shape!r}")
        field["format"] = shape
    default = spec.get("default")
    if default is not None:
        try:
            field["default"] = _value(field, default)
        except ValueError:
            field["default"] = None  # a default that does not fit is no default
    return field


def _kind(name: str, spec: Mapping[str, Any]) -> tuple[InputFieldKind, list[InputOptionPayload]]:
    kind = spec.get("type")
    if kind == "string":
        if "enum" in spec or "oneOf" in spec:
            return "choice", _options(name, spec)
        return "text", []
    if kind == "number" or kind == "integer" or kind == "boolean":
        return ("boolean" if kind == "boolean" else kind), []
    if kind == "array":
        items = spec.get("items")
        if isinstance(items, Mapping) and ("enum" in items or "anyOf" in items):
            return "choices", _options(name, items, "anyOf")
    raise FormUnsupported(
        f"field {name!r} must be a string, number, integer, boolean or a choice of strings"
    )


def _options(name: str, spec: Mapping[str, Any], titled: str = "oneOf") -> list[InputOptionPayload]:
    """A choice's options: ``enum`` (with the older ``enumNames`` as labels), or a list of
    ``{const, title}``."""
    if "enum" in spec:
        values = spec["enum"]
        labels = spec.get("enumNames") or values
        pairs = list(zip(values, labels, strict=False)) if isinstance(values, list) else []
    else:
        listed = spec.get(titled)
        pairs = [
            (item.get("const"), item.get("title") or item.get("const"))
            for item in (listed if isinstance(listed, list) else [])
            if isinstance(item, Mapping)
        ]
    if not pairs or len(pairs) > MAX_OPTIONS:
        raise FormUnsupported(f"field {name!r} needs 1 to {MAX_OPTIONS} options")
    if not all(isinstance(value, str) for value, _ in pairs):
        raise FormUnsupported(f"field {name!r} offers options that are not strings")
    return [{"value": value, "label": _text(label) or value} for value, label in pairs]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


# -- checking an answer ------------------------------------------------------------------------


def _value(field: InputFieldPayload, raw: Any) -> Value:
    """``raw`` as the field's value; ``ValueError`` saying what is wrong."""
    kind = field["kind"]
    if kind == "text":
        return _checked_text(field, raw)
    if kind == "boolean":
        if not isinstance(raw, bool):
            raise ValueError("must be true or false")
        return raw
    if kind == "number" or kind == "integer":
        return _checked_number(field, raw)
    allowed = [option["value"] for option in field["options"]]
    if kind == "choice":
        if raw not in allowed:
            raise ValueError(f"must be one of {allowed}")
        return str(raw)
    if not isinstance(raw, list) or not all(item in allowed for item in raw):
        raise ValueError(f"must be a list of {allowed}")
    if len(set(raw)) != len(raw):
        raise ValueError("lists an option twice")
    _check_count(len(raw), field["min_items"], field["max_items"], "choices")
    return [str(item) for item in raw]


def _check_count(count: int, low: int | None, high: int | None, unit: str) -> None:
    """``ValueError`` when ``count`` of ``unit`` is outside the bounds the form gives."""
    if low is not None and count < low:
        raise ValueError(f"needs at least {low} {unit}")
    if high is not None and count > high:
        raise ValueError(f"takes at most {high} {unit}")


def _checked_text(field: InputFieldPayload, raw: Any) -> str:
    if not isinstance(raw, str):
        raise ValueError("must be text")
    _check_count(len(raw), field["min_length"], field["max_length"], "characters")
    shape = field["format"]
    if shape == "email" and not EMAIL.match(raw):
        raise ValueError("must be an email address")
    if shape == "uri" and not URI.match(raw):
        raise ValueError("must be a URI (such as https://example.com)")
    try:
        if shape == "date":
            date.fromisoformat(raw)
        elif shape == "date-time":
            datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"must be a {shape} (ISO 8601)") from None
    return raw


def _checked_number(field: InputFieldPayload, raw: Any) -> int | float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise ValueError("must be a number")
    value: int | float = raw
    if field["kind"] == "integer":
        if isinstance(raw, float) and not raw.is_integer():
            raise ValueError("must be a whole number")
        value = int(raw)
    low, high = field["minimum"], field["maximum"]
    if low is not None and value < low:
        raise ValueError(f"must be at least {low:g}")
    if high is not None and value > high:
        raise ValueError(f"must be at most {high:g}")
    return value
