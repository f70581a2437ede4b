"""The fields that steer the model, read from either API's spelling: ``tool_choice``,
``parallel_tool_calls`` and the answer's format (chat's ``response_format``, the Responses
API's ``text.format``).

What a client sends reaches the model as it was sent (``orkestrel.core.ProviderStreamOptions``):
a forced function, ``required``, a JSON Schema with its ``name`` and ``strict``, ``json_object``
as such. ``none`` withholds the client's tools (the profile's own stay the agent's);
``allowed_tools`` offers only the tools it lists. Hosted tools (file search, web search, MCP,
custom tools) do not run here: naming one is a ``400``, as for ``tools``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orkestrel.core import NamedToolChoice, ResponseFormat, ToolChoice, ToolDefinition

from . import fields
from .errors import bad_request

__all__ = ["Steering", "answer_format", "schema_of", "steering"]

MODES = ("auto", "none", "required")
# OpenAI's rule for a schema's ``name``.
SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Steering:
    """The client's tools as offered to the model, and how it must use them."""

    tools: tuple[ToolDefinition, ...]
    tool_choice: ToolChoice | None
    parallel_tool_calls: bool | None


def _function_name(entry: Mapping[str, Any], param: str, *, nested: bool) -> str:
    """The name of a ``{"type": "function", ...}`` entry (chat nests it under ``function``)."""
    if nested:
        function = fields.object_field(entry.get("function"), f"{param}.function")
        return fields.text(function.get("name"), f"{param}.function.name")
    return fields.text(entry.get("name"), f"{param}.name")


def _offered(
    name: str, tools: tuple[ToolDefinition, ...], param: str
) -> tuple[ToolDefinition, ...]:
    if name not in {tool.name for tool in tools}:
        raise bad_request(
            f"'{param}' names the function '{name}', which is not in 'tools'.",
            param,
            "invalid_value",
        )
    return tools


def _allowed(
    entry: Mapping[str, Any], tools: tuple[ToolDefinition, ...], *, nested: bool
) -> tuple[tuple[ToolDefinition, ...], ToolChoice]:
    """``allowed_tools``: only the tools it lists are offered, with its ``mode``."""
    where = "tool_choice.allowed_tools" if nested else "tool_choice"
    spec = fields.object_field(entry.get("allowed_tools"), where) if nested else entry
    mode = spec.get("mode")
    if mode not in ("auto", "required"):
        raise bad_request(
            f"'{where}.mode' must be 'auto' or 'required'.", f"{where}.mode", "invalid_value"
        )
    listed = spec.get("tools")
    if not isinstance(listed, list) or not listed:
        raise bad_request(f"'{where}.tools' must be a non-empty array.", f"{where}.tools")
    names: set[str] = set()
    for index, item in enumerate(listed):
        param = f"{where}.tools[{index}]"
        tool = fields.object_field(item, param)
        if tool.get("type") != "function":
            raise bad_request(
                f"'{param}.type' is not supported: only function tools run on the client.",
                f"{param}.type",
                "unsupported_value",
            )
        name = _function_name(tool, param, nested=nested)
        _offered(name, tools, f"{param}.name" if not nested else f"{param}.function.name")
        names.add(name)
    return tuple(tool for tool in tools if tool.name in names), mode


def _choice(
    value: object, tools: tuple[ToolDefinition, ...], *, nested: bool
) -> tuple[tuple[ToolDefinition, ...], ToolChoice | None]:
    """The tools to offer and the choice to send for ``tool_choice`` as given."""
    if value is None:
        return tools, None
    if isinstance(value, str):
        if value not in MODES:
            raise bad_request(
                f"'tool_choice' must be one of {', '.join(MODES)}, or an object.",
                "tool_choice",
                "invalid_value",
            )
        if value == "none":
            return (), None  # the model may not call the client's tools: do not offer them
        if value == "auto":
            return tools, "auto"
        if not tools:
            raise bad_request(
                "'tool_choice' 'required' needs the function tools in 'tools'.", "tool_choice"
            )
        return tools, "required"
    entry = fields.object_field(value, "tool_choice")
    kind = entry.get("type")
    if kind == "function":
        name = _function_name(entry, "tool_choice", nested=nested)
        param = "tool_choice.function.name" if nested else "tool_choice.name"
        return _offered(name, tools, param), NamedToolChoice(name)
    if kind == "allowed_tools":
        return _allowed(entry, tools, nested=nested)
    raise bad_request(
        f"'tool_choice.type' {kind!r} is not supported: only function tools run on the client.",
        "tool_choice.type",
        "unsupported_value",
    )


def steering(
    body: Mapping[str, Any], tools: tuple[ToolDefinition, ...], *, nested: bool
) -> Steering:
    """``tool_choice`` and ``parallel_tool_calls`` of a request whose function tools are
    ``tools`` (``nested``: chat's spelling, ``{"type": "function", "function": {...}}``)."""
    offered, choice = _choice(body.get("tool_choice"), tools, nested=nested)
    parallel = None
    if body.get("parallel_tool_calls") is not None:
        parallel = fields.boolean(body, "parallel_tool_calls", True)
    return Steering(offered, choice, parallel)


def answer_format(spec: Mapping[str, Any], param: str, *, nested: bool) -> ResponseFormat | None:
    """An answer format: ``text`` (none), ``json_object``, or ``json_schema`` with its
    ``name``, ``description``, ``schema`` and ``strict`` (chat nests them under
    ``json_schema``)."""
    kind = spec.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(type="json_object")
    if kind != "json_schema":
        raise bad_request(
            f"'{param}.type' must be 'text', 'json_object' or 'json_schema'.",
            f"{param}.type",
            "invalid_value",
        )
    if nested:
        param = f"{param}.json_schema"
        spec = fields.object_field(spec.get("json_schema"), param)
    name = spec.get("name")
    if name is not None and (not isinstance(name, str) or not SCHEMA_NAME.match(name)):
        raise bad_request(
            f"'{param}.name' must be 1 to 64 letters, digits, underscores or dashes.",
            f"{param}.name",
            "invalid_value",
        )
    description = spec.get("description")
    if description is not None:
        description = fields.text(description, f"{param}.description")
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise bad_request(
            f"Invalid type for '{param}.strict': expected a boolean.",
            f"{param}.strict",
            "invalid_type",
        )
    return ResponseFormat(
        type="json_schema",
        schema=fields.json_schema(spec.get("schema"), f"{param}.schema"),
        name=name,
        description=description,
        strict=strict,
    )


def schema_of(answer: ResponseFormat | None) -> Mapping[str, Any] | None:
    """The JSON Schema the run's answer follows (``json_object``: any object), as the kit's
    ``schema`` run option carries it for providers that read no more."""
    if answer is None:
        return None
    return answer.schema if answer.schema is not None else {"type": "object"}
