"""A ``POST /v1/chat/completions`` body, read into a run: its history, message and overrides."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orkestrel.core import Message, ResponseFormat, ToolCall, mint_id
from orkestrel.core.documents import Document
from orkestrel.protocol import Limits

from ..runtime.overrides import RunOverrides
from . import fields
from .documents import data_url_document
from .errors import bad_request
from .steering import answer_format, schema_of, steering

__all__ = ["MAX_MESSAGES", "ChatRequest", "parse_chat_request"]

MAX_MESSAGES = 4096
ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """What one chat completion runs: the history before the run's user message, that
    message (``content=None``: the history ends with tool results, answer them), the options."""

    model: str
    history: tuple[Message, ...]
    content: str | None
    images: tuple[str, ...]
    stream: bool
    include_usage: bool
    overrides: RunOverrides
    documents: tuple[Document, ...] = ()


def _text(value: object, param: str, limits: Limits, *, nullable: bool = False) -> str:
    """A message's text: a string or a list of ``text`` parts (joined)."""
    if value is None and nullable:
        return ""
    if isinstance(value, list):
        parts: list[str] = []
        for index, part in enumerate(value):
            where = f"{param}[{index}]"
            entry = fields.object_field(part, where)
            kind = entry.get("type")
            if kind == "text":
                parts.append(fields.text(entry.get("text"), f"{where}.text"))
            elif kind == "refusal":
                parts.append(fields.text(entry.get("refusal"), f"{where}.refusal"))
            else:
                raise bad_request(
                    f"'{where}.type' must be 'text' here, not {kind!r}.", f"{where}.type"
                )
        value = "".join(parts)
    value = fields.text(value, param)
    if len(value) > limits.max_message_chars:
        raise bad_request(f"'{param}' is longer than {limits.max_message_chars} characters.", param)
    return value


def _user(
    value: object, param: str, limits: Limits
) -> tuple[str, tuple[str, ...], tuple[Document, ...]]:
    """A user message's text, images (``image_url`` parts with ``data:`` URLs) and documents
    (``file`` parts with ``file_data``)."""
    if not isinstance(value, list):
        return _text(value, param, limits), (), ()
    texts: list[Any] = []
    images: list[str] = []
    documents: list[Document] = []
    for index, part in enumerate(value):
        where = f"{param}[{index}]"
        entry = fields.object_field(part, where)
        if entry.get("type") == "file":
            file = fields.object_field(entry.get("file"), f"{where}.file")
            documents.append(
                data_url_document(
                    file.get("file_data"),
                    file.get("filename"),
                    f"{where}.file",
                    len(documents),
                    file_id=file.get("file_id"),
                )
            )
        elif entry.get("type") == "image_url":
            image = fields.object_field(entry.get("image_url"), f"{where}.image_url")
            images.append(
                fields.data_url_image(
                    image.get("url"), f"{where}.image_url.url", limits, len(images)
                )
            )
        else:
            texts.append(part)
    return _text(texts, param, limits), tuple(images), tuple(documents)


def _calls(value: object, param: str) -> tuple[ToolCall, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise bad_request(f"'{param}' must be a non-empty array.", param)
    calls: list[ToolCall] = []
    for index, item in enumerate(value):
        where = f"{param}[{index}]"
        entry = fields.object_field(item, where)
        call_id = fields.text(entry.get("id"), f"{where}.id")
        function = fields.object_field(entry.get("function"), f"{where}.function")
        name = fields.text(function.get("name"), f"{where}.function.name")
        calls.append(ToolCall(call_id, name, arguments(function.get("arguments"), where)))
    return tuple(calls)


def arguments(value: object, where: str) -> dict[str, Any]:
    """A call's ``arguments``: a JSON object, as a string."""
    raw = fields.text(value, f"{where}.function.arguments")
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise bad_request(
            f"'{where}.function.arguments' must be a JSON object.", f"{where}.function.arguments"
        )
    return parsed


def _message(item: object, index: int, limits: Limits) -> Message:
    param = f"messages[{index}]"
    entry = fields.object_field(item, param)
    role = entry.get("role")
    if role not in ROLES:
        raise bad_request(
            f"'{param}.role' must be one of {', '.join(ROLES)}.", f"{param}.role", "invalid_value"
        )
    content = entry.get("content")
    where = f"{param}.content"
    if role in ("system", "developer"):
        return Message(mint_id(), "system", _text(content, where, limits))
    if role == "user":
        text, images, documents = _user(content, where, limits)
        return Message(mint_id(), "user", text, images=images or None, documents=documents or None)
    if role == "assistant":
        calls = _calls(entry.get("tool_calls"), f"{param}.tool_calls")
        return Message(mint_id(), "assistant", _text(content, where, limits, nullable=True), calls)
    call_id = fields.text(entry.get("tool_call_id"), f"{param}.tool_call_id")
    return Message(mint_id(), "tool", _text(content, where, limits), tool_call_id=call_id)


def _format(body: Mapping[str, Any]) -> ResponseFormat | None:
    """``response_format``: the format the answer must take, if any."""
    value = body.get("response_format")
    if value is None:
        return None
    spec = fields.object_field(value, "response_format")
    return answer_format(spec, "response_format", nested=True)


def parse_chat_request(body: Mapping[str, Any], limits: Limits) -> ChatRequest:
    """Read a chat completion request; ``OpenAIError`` (400) naming the first wrong field."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("'model' is required: an agent profile's slug.", "model")
    listed = body.get("messages")
    if not isinstance(listed, list) or not listed:
        raise bad_request("'messages' must be a non-empty array.", "messages")
    if len(listed) > MAX_MESSAGES:
        raise bad_request(f"'messages' holds at most {MAX_MESSAGES} messages.", "messages")
    messages = [_message(item, index, limits) for index, item in enumerate(listed)]
    n = fields.integer(body, "n", 1, 128)
    if n not in (None, 1):
        raise bad_request("Only 'n': 1 is supported: one run answers once.", "n")
    stream = fields.boolean(body, "stream", False)
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        include_usage = fields.boolean(
            fields.object_field(options, "stream_options"), "include_usage", False
        )
    max_tokens = fields.integer(body, "max_completion_tokens", 1, 2**31) or fields.integer(
        body, "max_tokens", 1, 2**31
    )
    steered = steering(body, fields.tool_list(body.get("tools"), "tools", nested=True), nested=True)
    tools = steered.tools
    sampling = fields.sampling(body)
    think = fields.effort(body.get("reasoning_effort"), "reasoning_effort")
    answer = _format(body)
    record: dict[str, Any] = {
        "api": "chat.completions",
        "model": model,
        "stream": stream,
        "tools": [tool.name for tool in tools],
        "sampling": sampling.fields(),
    }
    for name, value in (
        ("max_tokens", max_tokens),
        ("reasoning_effort", body.get("reasoning_effort")),
        ("tool_choice", body.get("tool_choice")),
        ("parallel_tool_calls", steered.parallel_tool_calls),
        ("response_format", answer.type if answer is not None else None),
        ("user", fields.string(body, "user")),
        ("metadata", fields.metadata(body)),
    ):
        if value is not None:
            record[name] = value
    last = messages[-1]
    documents: tuple[Document, ...] = ()
    if last.role == "user":
        history, content, images = tuple(messages[:-1]), last.content, tuple(last.images or ())
        documents = tuple(last.documents or ())
    else:
        history, content, images = tuple(messages), None, ()
    return ChatRequest(
        model=model,
        history=history,
        content=content,
        images=images,
        documents=documents,
        stream=stream,
        include_usage=include_usage,
        overrides=RunOverrides(
            client_tools=tools,
            sampling=sampling,
            schema=schema_of(answer),
            think=think,
            max_tokens=max_tokens,
            request=record,
            tool_choice=steered.tool_choice,
            parallel_tool_calls=steered.parallel_tool_calls,
            response_format=answer,
        ),
    )
