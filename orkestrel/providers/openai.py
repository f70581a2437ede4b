"""``OpenAIProvider``: Chat Completions, the protocol every OpenAI-compatible server speaks.

Streams ``POST {base_url}/chat/completions`` as server-sent events and asks for usage with
``stream_options.include_usage`` (it then arrives on a last chunk with empty ``choices``).
Reasoning arrives as ``delta.reasoning_content`` (DeepSeek, vLLM, llama.cpp) or
``delta.reasoning`` (OpenRouter, newer vLLM), or inline as ``<think>`` tags in the content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final, Unpack

from orkestrel.core.documents import document_text
from orkestrel.core.messages import Message
from orkestrel.core.provider import (
    NamedToolChoice,
    ProviderStreamItem,
    ProviderStreamOptions,
    ResponseFormat,
    ThinkingLevel,
    ToolChoice,
    ToolDefinition,
)
from orkestrel.core.usage import TokenUsage, sanitize_usage

from .base import HttpProvider, HttpProviderOptions, PendingCall, Turn
from .steering import Unsupported, answer_format
from .wire import (
    decode_json,
    link_tool_messages,
    think_level,
    to_image,
)

__all__ = ["OPENAI_REASONING_EFFORTS", "OpenAIProvider"]

# Thinking level → ``reasoning_effort`` (``think=True`` asks for "medium", ``False`` for "none").
# OpenAI's scale tops out at "xhigh", so "max" shares it; "none" turns reasoning off on the
# models that allow it (gpt-5.1 and later); unset ``think`` sends nothing (the server default).
OPENAI_REASONING_EFFORTS: Final[Mapping[ThinkingLevel, str]] = {
    "none": "none",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "xhigh",
}
_DONE: Final = b"[DONE]"
_NAME_PATTERN: Final = re.compile(r"[^a-zA-Z0-9_-]")


class _OpenAITurn(Turn):
    __slots__ = ()

    @property
    def complete(self) -> bool:
        # Some compatible servers end the body after the finish_reason without "[DONE]".
        return self.done or self.stop is not None

    def feed(self, payload: bytes, out: list[ProviderStreamItem]) -> None:
        if payload[:6] == _DONE:
            self.done = True
            return
        try:
            event = decode_json(payload)
        except ValueError:
            raise self.malformed(payload) from None
        if type(event) is not dict:
            raise self.malformed(payload, "event is not a JSON object")
        choices = event.get("choices")
        if choices:
            choice = choices[0]
            delta = choice.get("delta")
            if delta:
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if reasoning and type(reasoning) is str:
                    self.think(reasoning, out)
                content = delta.get("content") or delta.get("refusal")
                if content and type(content) is str:
                    self.text(content, out)
                calls = delta.get("tool_calls")
                if calls:
                    self._calls(calls, payload)
            finish = choice.get("finish_reason")
            if finish:
                self.stop = finish
        usage = event.get("usage")
        if usage:
            self.usage = _usage(usage)
        error = event.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            raise self.fail(f"stream error: {message}", body=payload.decode("utf-8", "replace"))

    def _calls(self, fragments: list[Any], payload: bytes) -> None:
        calls = self.calls
        for fragment in fragments:
            if type(fragment) is not dict:
                raise self.malformed(payload, "tool_calls item is not an object")
            index = fragment.get("index")
            call_id = fragment.get("id")
            if type(index) is not int:
                # No index (a few servers): a new id opens a call, fragments extend the last.
                last = calls.get(len(calls) - 1)
                opens = last is None or (call_id and call_id != last.id)
                index = len(calls) if opens else len(calls) - 1
            call = calls.get(index)
            if call is None:
                call = calls[index] = PendingCall(call_id or None, None)
            elif call_id and not call.id:
                call.id = call_id
            function = fragment.get("function")
            if function:
                name = function.get("name")
                if name and not call.name:
                    call.name = name
                arguments = function.get("arguments")
                if arguments:
                    if type(arguments) is str:
                        call.parts.append(arguments)
                    else:
                        call.value = arguments


def _content(message: Message, native_documents: bool) -> str | list[dict[str, Any]]:
    if not message.images and not message.documents:
        return message.content
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "text": message.content})
    for image in message.images or ():
        parts.append({"type": "image_url", "image_url": {"url": to_image(image).url}})
    for document in message.documents or ():
        if native_documents and document.native:
            url = f"data:{document.mime};base64,{document.data}"
            parts.append({"type": "file", "file": {"filename": document.name, "file_data": url}})
        else:
            parts.append({"type": "text", "text": document_text(document)})
    return parts


def _messages(messages: list[Message], native_documents: bool = False) -> list[dict[str, Any]]:
    links = link_tool_messages(messages)
    wire: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        role = message.role
        if role == "assistant" and message.calls:
            wire.append(
                {
                    "role": "assistant",
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
                            },
                        }
                        for call in message.calls
                    ],
                }
            )
        elif role == "tool":
            link = links[position]
            if link.id is None:
                # Nothing to answer: keep the text rather than send an id the API rejects.
                wire.append({"role": "user", "content": message.content})
            else:
                wire.append({"role": "tool", "tool_call_id": link.id, "content": message.content})
        elif role == "user":
            wire.append({"role": "user", "content": _content(message, native_documents)})
        else:
            wire.append({"role": role, "content": message.content})
    return wire


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = (
        dict(tool.parameters) if tool.parameters is not None else {"type": "object"}
    )
    if tool.strict is not None:
        function["strict"] = tool.strict  # the client's flag, unchanged
    return {"type": "function", "function": function}


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _schema_name(schema: Mapping[str, Any]) -> str:
    """A name for a schema the caller left unnamed (the API requires one): its title."""
    title = schema.get("title")
    return _NAME_PATTERN.sub("_", title)[:64] if isinstance(title, str) and title else "response"


def _response_format(answer: ResponseFormat) -> dict[str, Any]:
    """The format as asked: ``json_object`` as such; a schema with its name, description and
    ``strict`` unchanged."""
    if answer.type == "json_object":
        return {"type": "json_object"}
    assert answer.schema is not None
    spec: dict[str, Any] = {"name": answer.name or _schema_name(answer.schema)}
    if answer.description is not None:
        spec["description"] = answer.description
    spec["schema"] = dict(answer.schema)
    if answer.strict is not None:
        spec["strict"] = answer.strict
    return {"type": "json_schema", "json_schema": spec}


class OpenAIProvider(HttpProvider):
    """A ``Provider`` over OpenAI Chat Completions (and every compatible server).

    Args:
        model: The model name sent on each request.
        base_url: The API root, ending before ``/chat/completions``
            (default ``https://api.openai.com/v1``).
        api_key: Sent as ``Authorization: Bearer``; never shown in errors or ``repr``.
        connect_timeout: Seconds to establish a connection.
        read_timeout: Seconds to wait for each piece of the body (``None``: forever).
        retries: How many times a 429 / 5xx answer or a failed connect is retried.
        backoff: First retry pause in seconds, doubled each time, unless ``Retry-After``.
        max_backoff: Upper bound of any retry pause, ``Retry-After`` included.
        headers: Extra request headers.
        extra_body: Extra request-body fields (``temperature``, ``max_tokens``...), applied last.
        client: An ``httpx.AsyncClient`` to use instead of the provider's own.
        id: The trace label (default ``"<name>:<model>"``).
        name: The backend identifier used in errors (default ``"openai"``).
        format: The provider's preferred context framing.
        max_line_bytes: The longest stream line (or SSE event) accepted, in bytes (default
            ``MAX_LINE_BYTES``, 1 MiB); a longer one fails the call with a ``ProviderError``.
        first_token_timeout: Seconds until the body's first chunk (``None``: the read timeout
            only); a miss is retried like a failed connect.
        stream_idle_timeout: Seconds any gap between chunks may last once the body began
            (``None``: the read timeout only); a stall fails the call with a ``ProviderError``
            after the deltas so far, and is not retried (the answer would stream twice).
        include_usage: Ask for usage with ``stream_options`` (turn off for servers that refuse).
    """

    default_name = "openai"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def __init__(
        self,
        *,
        include_usage: bool = True,
        **options: Unpack[HttpProviderOptions],
    ) -> None:
        super().__init__(**options)
        self._include_usage = bool(include_usage)

    @classmethod
    def unsupported(cls, options: ProviderStreamOptions) -> Unsupported | None:
        """Chat Completions takes every request option as it is: nothing to refuse."""
        return None

    def _turn(self, options: ProviderStreamOptions) -> Turn:
        return _OpenAITurn(self._http.error)

    def _body(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: ProviderStreamOptions,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": _messages(messages, self.native_documents),
            "stream": True,
        }
        if self._include_usage:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = [_tool(tool) for tool in tools]
            # The API refuses both without tools (a summary's call has none).
            if options.tool_choice is not None:
                body["tool_choice"] = _tool_choice(options.tool_choice)
            if options.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = options.parallel_tool_calls
        level = think_level(options.think, "medium")
        if level is not None:
            body["reasoning_effort"] = OPENAI_REASONING_EFFORTS[level]
        answer = answer_format(options)
        if answer is not None:
            body["response_format"] = _response_format(answer)
        return body


def _usage(usage: dict[str, Any]) -> TokenUsage:
    """The wire's usage: cached input (``cache_write_tokens``: OpenRouter's) and reasoning are
    in its ``*_details``, subsets of ``prompt_tokens`` and ``completion_tokens``."""
    inputs = usage.get("prompt_tokens_details")
    outputs = usage.get("completion_tokens_details")
    inputs = inputs if type(inputs) is dict else {}
    outputs = outputs if type(outputs) is dict else {}
    clean = sanitize_usage(
        {
            "prompt": usage.get("prompt_tokens"),
            "completion": usage.get("completion_tokens"),
            "total": usage.get("total_tokens"),
            "cache_read": inputs.get("cached_tokens"),
            "cache_write": inputs.get("cache_write_tokens"),
            "reasoning": outputs.get("reasoning_tokens"),
        }
    )
    if usage.get("total_tokens") is None:
        clean = replace(clean, total=clean.prompt + clean.completion)
    return clean
