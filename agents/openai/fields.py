"""Reading the fields both OpenAI request bodies share, each wrong value a ``400`` naming it.

Unknown fields are ignored, as OpenAI does; a known field of the wrong type or out of range
is refused with its name in ``param``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from jsonschema import Draft202012Validator, SchemaError

from orkestrel.core import ThinkingLevel, ToolDefinition
from orkestrel.protocol import MAX_IMAGES, FrameError, Limits, check_image
from orkestrel.storable import TOO_DEEP, first_fault, problem

from ..runtime.overrides import Sampling
from .errors import bad_request

__all__ = [
    "MAX_STOP",
    "data_url_image",
    "effort",
    "function_tool",
    "integer",
    "json_schema",
    "metadata",
    "number",
    "object_field",
    "sampling",
    "storable",
    "string",
    "text",
    "tool_list",
    "boolean",
]

MAX_STOP = 4
MAX_TOOLS = 128
MAX_METADATA = 16
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DATA_URL = re.compile(r"^data:image/(png|jpeg|jpg|gif|webp);base64,(.*)$", re.DOTALL)
# OpenAI's efforts to the kit's thinking levels ("minimal" is the least a level can ask).
EFFORTS: Mapping[str, ThinkingLevel] = {
    "none": "none",
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _wrong(param: str, wanted: str, value: object) -> Exception:
    return bad_request(
        f"Invalid type for '{param}': expected {wanted}, but got {_kind(value)} instead.",
        param,
        "invalid_type",
    )


def storable(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The request body, once every string in it may be stored and it nests no deeper than
    ``orkestrel.storable.MAX_DEPTH`` (a ``400`` naming the first string that may not)."""
    fault = first_fault(body)
    if fault is None:
        return body
    if fault.problem == TOO_DEEP:
        raise bad_request(fault.message, code="invalid_json")
    raise bad_request(fault.message, fault.param or None, "invalid_text")


def text(value: object, param: str) -> str:
    """A string the database can hold (no NUL, no lone surrogate)."""
    if not isinstance(value, str):
        raise _wrong(param, "a string", value)
    found = problem(value)
    if found is not None:
        raise bad_request(f"'{param}' holds {found}.", param, "invalid_text")
    return value


def string(body: Mapping[str, Any], name: str, *, max_length: int = 512) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    value = text(value, name)
    if len(value) > max_length:
        raise bad_request(f"'{name}' is longer than {max_length} characters.", name)
    return value


def boolean(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _wrong(name, "a boolean", value)
    return value


def number(
    body: Mapping[str, Any], name: str, low: float, high: float, *, param: str | None = None
) -> float | None:
    value = body.get(name)
    param = param or name
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _wrong(param, "a number", value)
    if not low <= value <= high:
        raise bad_request(f"'{param}' must be between {low} and {high}, not {value}.", param)
    return float(value)


def integer(
    body: Mapping[str, Any], name: str, low: int, high: int, *, param: str | None = None
) -> int | None:
    value = body.get(name)
    param = param or name
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(param, "an integer", value)
    if not low <= value <= high:
        raise bad_request(f"'{param}' must be between {low} and {high}, not {value}.", param)
    return value


def object_field(value: object, param: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _wrong(param, "an object", value)
    return cast(Mapping[str, Any], value)


def metadata(body: Mapping[str, Any]) -> dict[str, str] | None:
    """Up to 16 string pairs, kept on the run for the operator."""
    value = body.get("metadata")
    if value is None:
        return None
    pairs = object_field(value, "metadata")
    if len(pairs) > MAX_METADATA:
        raise bad_request(f"'metadata' holds at most {MAX_METADATA} pairs.", "metadata")
    for key, item in pairs.items():
        if len(key) > 64 or not isinstance(item, str) or len(item) > 512:
            raise bad_request(
                "'metadata' keys are strings of up to 64 characters, values strings of up to 512.",
                "metadata",
            )
    return dict(pairs)


def sampling(body: Mapping[str, Any]) -> Sampling:
    """The sampling fields: passed to the upstream model as they are (or mapped)."""
    stop = body.get("stop")
    stops: tuple[str, ...] | None
    if stop is None:
        stops = None
    elif isinstance(stop, str):
        stops = (text(stop, "stop"),)
    elif isinstance(stop, list) and len(stop) <= MAX_STOP:
        stops = tuple(text(item, f"stop[{index}]") for index, item in enumerate(stop))
    else:
        raise bad_request(f"'stop' is a string or a list of up to {MAX_STOP} strings.", "stop")
    seed = integer(body, "seed", -(2**63), 2**63 - 1)
    return Sampling(
        temperature=number(body, "temperature", 0, 2),
        top_p=number(body, "top_p", 0, 1),
        seed=seed,
        stop=stops,
        presence_penalty=number(body, "presence_penalty", -2, 2),
        frequency_penalty=number(body, "frequency_penalty", -2, 2),
    )


def effort(value: object, param: str) -> ThinkingLevel | None:
    """OpenAI's ``reasoning_effort`` as the run's thinking level."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in EFFORTS:
        raise bad_request(f"'{param}' must be one of {', '.join(EFFORTS)}.", param, "invalid_value")
    return EFFORTS[value]


def json_schema(value: object, param: str) -> Mapping[str, Any]:
    """A JSON Schema the model's answer (or a tool's arguments) must follow."""
    schema = object_field(value, param)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise bad_request(f"'{param}' is not a valid JSON Schema: {error.message}", param) from None
    return schema


def function_tool(spec: Mapping[str, Any], param: str) -> ToolDefinition:
    """One function tool: ``{"name", "description", "parameters", "strict"}`` (the inner
    object; ``strict`` reaches the model server as given)."""
    name = spec.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise bad_request(
            f"'{param}.name' must be 1 to 64 letters, digits, underscores or dashes.",
            f"{param}.name",
        )
    description = spec.get("description")
    if description is not None:
        description = text(description, f"{param}.description")
    parameters = spec.get("parameters")
    if parameters is not None:
        parameters = json_schema(parameters, f"{param}.parameters")
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise _wrong(f"{param}.strict", "a boolean", strict)
    return ToolDefinition(name, description, parameters, strict)


def tool_list(value: object, param: str, *, nested: bool) -> tuple[ToolDefinition, ...]:
    """The request's function tools (``nested``: chat's ``{"type", "function": {...}}``)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _wrong(param, "an array", value)
    if len(value) > MAX_TOOLS:
        raise bad_request(f"'{param}' holds at most {MAX_TOOLS} tools.", param)
    tools: list[ToolDefinition] = []
    for index, item in enumerate(value):
        where = f"{param}[{index}]"
        entry = object_field(item, where)
        if entry.get("type") != "function":
            raise bad_request(
                f"'{where}.type' is not supported: only function tools run on the client.",
                f"{where}.type",
                "unsupported_value",
            )
        if nested:
            tools.append(
                function_tool(
                    object_field(entry.get("function"), f"{where}.function"), f"{where}.function"
                )
            )
        else:
            tools.append(function_tool(entry, where))
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise bad_request(f"'{param}' names a tool twice.", param)
    return tuple(tools)


def data_url_image(url: object, param: str, limits: Limits, count: int) -> str:
    """An image given as a ``data:`` URL, as the base64 the models take."""
    if not isinstance(url, str):
        raise _wrong(param, "a string", url)
    if count >= MAX_IMAGES:
        raise bad_request(f"At most {MAX_IMAGES} images per message.", param)
    found = DATA_URL.match(url)
    if found is None:
        raise bad_request(
            f"'{param}' must be a data: URL of a PNG, JPEG, GIF or WebP image (base64); "
            "this server does not fetch images from the web.",
            param,
            "invalid_image_url",
        )
    try:
        return check_image(found.group(2), count, limits.max_image_bytes)
    except FrameError as error:
        raise bad_request(f"'{param}': {error}", param, "invalid_image") from None
