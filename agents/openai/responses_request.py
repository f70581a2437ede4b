"""A ``POST /v1/responses`` body, read into a run: new input, the stored conversation it
continues (``previous_response_id``), and the run's options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orkestrel.core import Message, ResponseFormat, ToolCall, mint_id
from orkestrel.core.documents import Document
from orkestrel.protocol import Limits

from ..runtime.overrides import RunOverrides
from . import fields
from .approvals import Answer
from .chat_request import MAX_MESSAGES, arguments
from .documents import data_url_document
from .errors import bad_request
from .steering import answer_format, schema_of, steering

__all__ = ["ResponsesRequest", "parse_responses_request"]

TEXT_PARTS = ("input_text", "output_text", "text", "refusal")
MESSAGE_ROLES = ("user", "system", "developer", "assistant")


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    """What one response runs.

    ``history`` precedes the run's user message (``content``; ``None``: answer what is
    there). With ``previous`` the stored conversation continues: ``results`` fill in the
    client calls it waits for, and system or developer input joins ``overrides.system``;
    ``approvals`` answer the calls it holds for approval (then nothing else is sent).
    ``echo`` holds the request fields the response object repeats.
    """

    model: str
    history: tuple[Message, ...]
    content: str | None
    images: tuple[str, ...]
    previous: str | None
    store: bool
    stream: bool
    overrides: RunOverrides
    results: dict[str, str] = field(default_factory=dict)
    echo: dict[str, Any] = field(default_factory=dict)
    approvals: tuple[Answer, ...] = ()
    documents: tuple[Document, ...] = ()


def _content(
    value: object, param: str, limits: Limits, role: str
) -> tuple[str, tuple[str, ...], tuple[Document, ...]]:
    """A message item's text and (for a user) images and documents (``input_file``)."""
    documents: list[Document] = []
    if isinstance(value, str):
        text = fields.text(value, param)
        images: list[str] = []
    elif isinstance(value, list):
        parts: list[str] = []
        images = []
        for index, part in enumerate(value):
            where = f"{param}[{index}]"
            entry = fields.object_field(part, where)
            kind = entry.get("type")
            if kind in TEXT_PARTS:
                key = "refusal" if kind == "refusal" else "text"
                parts.append(fields.text(entry.get(key), f"{where}.{key}"))
            elif kind == "input_image" and role == "user":
                images.append(
                    fields.data_url_image(
                        entry.get("image_url"), f"{where}.image_url", limits, len(images)
                    )
                )
            elif kind == "input_file" and role == "user":
                documents.append(
                    data_url_document(
                        entry.get("file_data"),
                        entry.get("filename"),
                        where,
                        len(documents),
                        file_id=entry.get("file_id") or entry.get("file_url"),
                    )
                )
            else:
                raise bad_request(
                    f"'{where}.type' {kind!r} is not supported here.", f"{where}.type"
                )
        text = "".join(parts)
    else:
        raise bad_request(f"'{param}' must be a string or an array of content parts.", param)
    if len(text) > limits.max_message_chars:
        raise bad_request(f"'{param}' is longer than {limits.max_message_chars} characters.", param)
    return text, tuple(images), tuple(documents)


def _output(value: object, param: str) -> str:
    """A ``function_call_output``'s ``output``: a string, or text parts."""
    if isinstance(value, list):
        texts = []
        for index, part in enumerate(value):
            entry = fields.object_field(part, f"{param}[{index}]")
            texts.append(fields.text(entry.get("text"), f"{param}[{index}].text"))
        return "".join(texts)
    return fields.text(value, param)


@dataclass
class _Reader:
    """Input items in order, into messages (and, continuing, results and instructions)."""

    limits: Limits
    continuing: bool
    messages: list[Message] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    system: list[str] = field(default_factory=list)
    declared: set[str] = field(default_factory=set)
    approvals: list[Answer] = field(default_factory=list)

    def item(self, value: object, index: int) -> None:
        param = f"input[{index}]"
        entry = fields.object_field(value, param)
        kind = entry.get("type", "message")
        if kind == "message" or (kind is None and "role" in entry):
            self._message(entry, param)
        elif kind == "function_call":
            self._call(entry, param)
        elif kind == "function_call_output":
            call_id = fields.text(entry.get("call_id"), f"{param}.call_id")
            output = _output(entry.get("output"), f"{param}.output")
            if self.continuing and call_id not in self.declared:
                self.results[call_id] = output
            else:
                self.messages.append(Message(mint_id(), "tool", output, tool_call_id=call_id))
        elif kind == "mcp_approval_response":
            self._approval(entry, param)
        elif kind in ("reasoning", "mcp_approval_request"):
            return  # the model's reasoning, a request this server made: nothing to read back
        else:
            raise bad_request(
                f"'{param}.type' {kind!r} is not supported.", f"{param}.type", "unsupported_value"
            )

    def _message(self, entry: Mapping[str, Any], param: str) -> None:
        role = entry.get("role")
        if role not in MESSAGE_ROLES:
            raise bad_request(
                f"'{param}.role' must be one of {', '.join(MESSAGE_ROLES)}.", f"{param}.role"
            )
        text, images, documents = _content(
            entry.get("content"), f"{param}.content", self.limits, role
        )
        if role in ("system", "developer"):
            if self.continuing:
                self.system.append(text)  # this turn's instructions, not stored history
            else:
                self.messages.append(Message(mint_id(), "system", text))
        elif role == "user":
            self.messages.append(
                Message(mint_id(), "user", text, images=images or None, documents=documents or None)
            )
        elif self.continuing:
            raise bad_request(
                "With previous_response_id send only new input: the conversation is stored.",
                f"{param}.role",
            )
        else:
            self.messages.append(Message(mint_id(), "assistant", text))

    def _approval(self, entry: Mapping[str, Any], param: str) -> None:
        if not self.continuing:
            raise bad_request(
                "An mcp_approval_response answers a previous response: send its "
                "previous_response_id.",
                param,
                "missing_previous_response_id",
            )
        request_id = fields.text(entry.get("approval_request_id"), f"{param}.approval_request_id")
        approve = entry.get("approve")
        if not isinstance(approve, bool):
            raise bad_request(
                f"'{param}.approve' is required: true to run the call, false to refuse it.",
                f"{param}.approve",
                "invalid_type",
            )
        reason = entry.get("reason")
        reason = fields.text(reason, f"{param}.reason").strip() if reason is not None else ""
        if len(reason) > self.limits.max_message_chars:
            raise bad_request(
                f"'{param}.reason' is longer than {self.limits.max_message_chars} characters.",
                f"{param}.reason",
            )
        self.approvals.append(Answer(request_id, approve, reason, param))

    def _call(self, entry: Mapping[str, Any], param: str) -> None:
        if self.continuing:
            raise bad_request(
                "With previous_response_id send only new input: the conversation is stored.",
                f"{param}.type",
            )
        call_id = fields.text(entry.get("call_id"), f"{param}.call_id")
        name = fields.text(entry.get("name"), f"{param}.name")
        call = ToolCall(call_id, name, arguments(entry.get("arguments"), param))
        self.declared.add(call_id)
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "assistant" and not last.images:
            # Calls after an assistant message (or each other) belong to that turn.
            self.messages[-1] = Message(
                last.id, "assistant", last.content, (*(last.calls or ()), call)
            )
        else:
            self.messages.append(Message(mint_id(), "assistant", "", (call,)))


def _format(body: Mapping[str, Any]) -> tuple[ResponseFormat | None, dict[str, Any]]:
    """``text.format``: the answer's format, and the ``text`` object to echo."""
    value = body.get("text")
    if value is None:
        return None, {"format": {"type": "text"}}
    spec = fields.object_field(value, "text")
    shape = spec.get("format")
    if shape is None:
        return None, {"format": {"type": "text"}}
    entry = fields.object_field(shape, "text.format")
    answer = answer_format(entry, "text.format", nested=False)
    shown = dict(entry) if entry.get("type") == "json_schema" else {"type": entry["type"]}
    return answer, {"format": shown}


def parse_responses_request(body: Mapping[str, Any], limits: Limits) -> ResponsesRequest:
    """Read a Responses API request; ``OpenAIError`` (400) naming the first wrong field."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("'model' is required: an agent profile's slug.", "model")
    previous = fields.string(body, "previous_response_id", max_length=64)
    reader = _Reader(limits, continuing=previous is not None)
    given = body.get("input")
    if isinstance(given, str):
        reader.messages.append(Message(mint_id(), "user", fields.text(given, "input")))
    elif isinstance(given, list) and given:
        if len(given) > MAX_MESSAGES:
            raise bad_request(f"'input' holds at most {MAX_MESSAGES} items.", "input")
        for index, item in enumerate(given):
            reader.item(item, index)
    else:
        raise bad_request("'input' must be a string or a non-empty array of items.", "input")
    instructions = fields.string(body, "instructions", max_length=limits.max_message_chars)
    steered = steering(
        body, fields.tool_list(body.get("tools"), "tools", nested=False), nested=False
    )
    tools = steered.tools
    reasoning = body.get("reasoning")
    asked = None
    if reasoning is not None:
        asked = fields.object_field(reasoning, "reasoning").get("effort")
    effort = fields.effort(asked, "reasoning.effort")
    answer, text = _format(body)
    sampling = fields.sampling(body)
    max_tokens = fields.integer(body, "max_output_tokens", 1, 2**31)
    metadata = fields.metadata(body)
    store = fields.boolean(body, "store", True)
    stream = fields.boolean(body, "stream", False)
    user = fields.string(body, "user")
    messages = reader.messages
    last = messages[-1] if messages else None
    documents: tuple[Document, ...] = ()
    if last is not None and last.role == "user":
        history, content, images = tuple(messages[:-1]), last.content, tuple(last.images or ())
        documents = tuple(last.documents or ())
    else:
        history, content, images = tuple(messages), None, ()
    if previous is not None and history:
        raise bad_request(
            "With previous_response_id send one user message at most, after any tool outputs.",
            "input",
        )
    if reader.approvals and (content is not None or history or reader.results or reader.system):
        raise bad_request(
            "With mcp_approval_response items send no other input: the run goes on from "
            "the decisions.",
            "input",
        )
    if previous is not None and content is None and not reader.results and not reader.approvals:
        raise bad_request("'input' holds nothing new to answer.", "input")
    system = "\n\n".join(filter(None, (instructions, *reader.system))) or None
    record: dict[str, Any] = {
        "api": "responses",
        "model": model,
        "stream": stream,
        "store": store,
        "tools": [tool.name for tool in tools],
        "sampling": sampling.fields(),
    }
    for name, value in (
        ("previous_response_id", previous),
        ("max_output_tokens", max_tokens),
        ("reasoning_effort", asked),
        ("tool_choice", body.get("tool_choice")),
        ("parallel_tool_calls", steered.parallel_tool_calls),
        ("text_format", text["format"]["type"]),
        ("user", user),
        ("metadata", metadata),
    ):
        if value is not None:
            record[name] = value
    echo: dict[str, Any] = {
        "instructions": instructions,
        "metadata": metadata or {},
        "max_output_tokens": max_tokens,
        "previous_response_id": previous,
        "store": store,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "text": text,
        "tool_choice": body.get("tool_choice") or "auto",
        "parallel_tool_calls": (
            steered.parallel_tool_calls if steered.parallel_tool_calls is not None else True
        ),
        "tools": [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters) if tool.parameters is not None else None,
                "strict": tool.strict,
            }
            for tool in tools
        ],
        "reasoning": {"effort": asked, "summary": None},
        "user": user,
    }
    return ResponsesRequest(
        model=model,
        history=history,
        content=content,
        images=images,
        documents=documents,
        previous=previous,
        store=store,
        stream=stream,
        overrides=RunOverrides(
            client_tools=tools,
            sampling=sampling,
            schema=schema_of(answer),
            think=effort,
            max_tokens=max_tokens,
            system=system,
            request=record,
            tool_choice=steered.tool_choice,
            parallel_tool_calls=steered.parallel_tool_calls,
            response_format=answer,
        ),
        results=reader.results,
        echo=echo,
        approvals=tuple(reader.approvals),
    )
