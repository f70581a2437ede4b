"""``AnthropicProvider``: the Messages API, streamed as server-sent events.

Events: ``message_start`` (input usage), ``content_block_start`` / ``_delta`` / ``_stop`` for
``text``, ``thinking`` (+ ``signature_delta``), ``redacted_thinking`` and ``tool_use``
(``input_json_delta`` fragments), ``message_delta`` (``stop_reason``, output usage),
``message_stop``, ``ping`` and ``error``.

Extended thinking with tools needs the turn's signed thinking blocks sent back on the next
request. ``Message`` has no place for them, so the provider remembers them by tool-call id
(a small bounded cache); when they are unknown (another process produced the turn) thinking
is left off for that request instead of failing it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final, Literal, Unpack

from orkestrel.core.documents import document_text
from orkestrel.core.messages import Message
from orkestrel.core.provider import (
    ContentDelta,
    NamedToolChoice,
    ProviderResult,
    ProviderStreamItem,
    ProviderStreamOptions,
    ResponseFormat,
    ThinkingLevel,
    ToolChoice,
    ToolDefinition,
)
from orkestrel.core.usage import sanitize_usage

from .base import ErrorFactory, HttpProvider, HttpProviderOptions, PendingCall, Turn
from .steering import Unsupported, UnsupportedOption, answer_format, forces_tool
from .wire import (
    decode_json,
    link_tool_messages,
    think_level,
    to_image,
)

__all__ = ["ANTHROPIC_THINKING_BUDGETS", "ANTHROPIC_VERSION", "SCHEMA_TOOL", "AnthropicProvider"]

ANTHROPIC_VERSION: Final = "2023-06-01"
# Thinking level → ``budget_tokens`` (the API's minimum is 1024). The request's ``max_tokens``
# becomes ``max_tokens + budget`` so thinking never eats the answer's room.
ANTHROPIC_THINKING_BUDGETS: Final[Mapping[ThinkingLevel, int]] = {
    "low": 1024,
    "medium": 4096,
    "high": 10240,
    "xhigh": 20480,
    "max": 32000,
}
# The forced tool that carries a structured answer; its input becomes the content.
SCHEMA_TOOL: Final = "json_response"
_CACHE_SIZE: Final = 256
_RETRYABLE_ERRORS: Final = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
# What each content block index holds ("json": the forced schema tool carrying the answer).
_BlockKind = Literal["text", "thinking", "redacted", "json", "tool", "other"]


class _AnthropicTurn(Turn):
    __slots__ = (
        "_cache_read",
        "_cache_write",
        "_input",
        "_output",
        "answer",
        "blocks",
        "kinds",
        "schema",
    )

    def __init__(self, error: ErrorFactory, schema: bool) -> None:
        super().__init__(error)
        self.schema = schema
        self.kinds: dict[int, _BlockKind] = {}
        # Thinking / redacted blocks by index, kept to send back with a tool-use turn.
        self.blocks: dict[int, dict[str, Any]] = {}
        self.answer: list[str] | None = None
        self._input = 0
        self._output = 0
        self._cache_read = 0
        self._cache_write = 0

    def feed(self, payload: bytes, out: list[ProviderStreamItem]) -> None:
        try:
            event = decode_json(payload)
            kind = event["type"]
            if kind == "content_block_delta":
                self._delta(event["index"], event["delta"], out)
            elif kind == "content_block_start":
                self._start(event["index"], event["content_block"], out)
            elif kind == "message_delta":
                stop = event["delta"].get("stop_reason")
                if stop:
                    self.stop = stop
                self._count(event.get("usage"))
            elif kind == "message_start":
                self._count(event["message"].get("usage"))
            elif kind == "message_stop":
                self.done = True
            elif kind == "error":
                error = event.get("error") or {}
                what = error.get("type", "error")
                raise self.fail(
                    f"stream error: {what}: {error.get('message', '')}",
                    body=payload.decode("utf-8", "replace"),
                    retryable=what in _RETRYABLE_ERRORS,
                )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise self.malformed(payload) from None

    def _start(self, index: int, block: dict[str, Any], out: list[ProviderStreamItem]) -> None:
        kind = block["type"]
        if kind == "text":
            self.kinds[index] = "text"
            if block.get("text"):
                self.text(block["text"], out)
        elif kind == "thinking":
            self.kinds[index] = "thinking"
            initial = block.get("thinking") or ""
            self.blocks[index] = {
                "type": "thinking",
                "thinking": [initial],
                "signature": block.get("signature") or "",
            }
            if initial:
                self.think(initial, out)
        elif kind == "redacted_thinking":
            self.kinds[index] = "redacted"
            self.blocks[index] = {"type": "redacted_thinking", "data": block.get("data", "")}
        elif kind == "tool_use":
            initial = block.get("input") or None
            if self.schema and block.get("name") == SCHEMA_TOOL:
                self.kinds[index] = "json"
                self.answer = []
                if initial:
                    text = json.dumps(initial, ensure_ascii=False)
                    self.answer.append(text)
                    out.append(ContentDelta(text))
            else:
                self.kinds[index] = "tool"
                call = self.calls[index] = PendingCall(block.get("id"), block.get("name"))
                call.value = initial
        else:
            self.kinds[index] = "other"

    def _delta(self, index: int, delta: dict[str, Any], out: list[ProviderStreamItem]) -> None:
        kind = delta["type"]
        if kind == "text_delta":
            self.text(delta["text"], out)
        elif kind == "thinking_delta":
            text = delta["thinking"]
            if text:
                self.think(text, out)
                block = self.blocks.get(index)
                if block is not None:
                    block["thinking"].append(text)
        elif kind == "input_json_delta":
            part = delta["partial_json"]
            where = self.kinds.get(index)
            if where == "json" and self.answer is not None:
                if part:
                    self.answer.append(part)
                    out.append(ContentDelta(part))
            elif where == "tool":
                call = self.calls[index]
                call.value = None  # Streamed fragments supersede the empty start input.
                call.parts.append(part)
        elif kind == "signature_delta":
            block = self.blocks.get(index)
            if block is not None:
                block["signature"] += delta["signature"]

    def _count(self, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        if usage.get("input_tokens") is not None:
            # ``input_tokens`` leaves the cached input out; ours counts all of it.
            self._cache_read = usage.get("cache_read_input_tokens") or 0
            self._cache_write = usage.get("cache_creation_input_tokens") or 0
            self._input = (usage.get("input_tokens") or 0) + self._cache_read + self._cache_write
        if usage.get("output_tokens") is not None:
            self._output = usage["output_tokens"]
        self.usage = sanitize_usage(
            {
                "prompt": self._input,
                "completion": self._output,
                "total": self._input + self._output,
                "cache_read": self._cache_read,
                "cache_write": self._cache_write,
            }
        )

    def content(self) -> str:
        if self.answer is not None:
            return "".join(self.answer)
        return super().content()

    def thinking_blocks(self) -> list[dict[str, Any]]:
        """The signed thinking blocks of this turn, ready to send back."""
        blocks: list[dict[str, Any]] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["type"] == "thinking":
                block = {**block, "thinking": "".join(block["thinking"])}
            blocks.append(block)
        return blocks


def _user_blocks(message: Message, native_documents: bool) -> str | list[dict[str, Any]]:
    if not message.images and not message.documents:
        return message.content
    blocks: list[dict[str, Any]] = []
    for document in message.documents or ():
        if native_documents and document.native:
            source = {"type": "base64", "media_type": document.mime, "data": document.data}
            blocks.append({"type": "document", "source": source, "title": document.name})
        else:
            blocks.append({"type": "text", "text": document_text(document)})
    for image in message.images or ():
        picture = to_image(image)
        blocks.append(
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": picture.media_type,
                    "data": picture.data,
                },
            }
        )
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    return blocks


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        wire["description"] = tool.description
    wire["input_schema"] = (
        dict(tool.parameters) if tool.parameters is not None else {"type": "object"}
    )
    return wire


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    """``tool_choice`` as the Messages API spells it (``required`` is ``any``)."""
    if isinstance(choice, NamedToolChoice):
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice == "required" else choice}


def _schema_tool(answer: ResponseFormat) -> dict[str, Any]:
    """The forced tool whose input is the answer (any object for ``json_object``)."""
    description = "Give the final answer as JSON matching this schema."
    if answer.description:
        description += f" {answer.description}"
    schema = dict(answer.schema) if answer.schema is not None else {"type": "object"}
    return {"name": SCHEMA_TOOL, "description": description, "input_schema": schema}


class AnthropicProvider(HttpProvider):
    """A ``Provider`` over the Anthropic Messages API.

    Takes the same arguments as ``OpenAIProvider`` (``base_url`` defaults to
    ``https://api.anthropic.com``; the key goes in ``x-api-key``), plus:

    Args:
        max_tokens: The answer's token cap (required by the API); thinking adds its budget.
        thinking_budgets: Overrides of ``ANTHROPIC_THINKING_BUDGETS`` by level.
    """

    default_name = "anthropic"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"

    def __init__(
        self,
        *,
        max_tokens: int = 4096,
        thinking_budgets: Mapping[ThinkingLevel, int] | None = None,
        **options: Unpack[HttpProviderOptions],
    ) -> None:
        super().__init__(**options)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, not {max_tokens!r}")
        budgets = dict(ANTHROPIC_THINKING_BUDGETS)
        for level, budget in (thinking_budgets or {}).items():
            if level not in budgets:
                raise ValueError(f"thinking_budgets keys must be thinking levels, not {level!r}")
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
                raise ValueError(f"thinking_budgets[{level!r}] must be an int >= 1024")
            budgets[level] = budget
        self._max_tokens = max_tokens
        self._budgets = budgets
        self._signed: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    @classmethod
    def unsupported(cls, options: ProviderStreamOptions) -> Unsupported | None:
        """What the Messages API cannot honour: a strict schema (the answer comes through a
        tool, which follows its schema without a guarantee), or a format with no tools."""
        answer = answer_format(options)
        if answer is None:
            return None
        if answer.strict:
            return Unsupported(
                "response_format.strict",
                "Anthropic's Messages API gives a structured answer through a tool call, "
                "which cannot guarantee a strict schema",
            )
        if options.tool_choice == "none":
            return Unsupported(
                "tool_choice",
                "Anthropic's Messages API gives a structured answer through a tool call, "
                "which tool_choice none forbids",
            )
        return None

    def _turn(self, options: ProviderStreamOptions) -> Turn:
        return _AnthropicTurn(self._http.error, answer_format(options) is not None)

    def _settled(self, turn: Turn, result: ProviderResult) -> None:
        assert isinstance(turn, _AnthropicTurn)
        if not result.tools or not turn.blocks:
            return
        blocks = turn.thinking_blocks()
        for call in result.tools:
            self._signed[call.id] = blocks
        while len(self._signed) > _CACHE_SIZE:
            self._signed.popitem(last=False)

    def _messages(self, messages: list[Message]) -> tuple[list[str], list[dict[str, Any]], bool]:
        """System texts, wire turns, and whether every open tool turn has its signed thinking."""
        links = link_tool_messages(messages)
        system: list[str] = []
        wire: list[dict[str, Any]] = []
        results_open = False
        signed = True
        for position, message in enumerate(messages):
            role = message.role
            if role == "system":
                if message.content:
                    system.append(message.content)
                continue
            if role == "tool":
                link = links[position]
                if link.id is None:
                    block: dict[str, Any] = {"type": "text", "text": message.content or "(empty)"}
                else:
                    block = {"type": "tool_result", "tool_use_id": link.id}
                    if message.content:
                        block["content"] = message.content
                if results_open:
                    wire[-1]["content"].append(block)
                else:
                    wire.append({"role": "user", "content": [block]})
                    results_open = True
                continue
            results_open = False
            if role == "user":
                signed = True  # A new user turn closes the previous tool loop.
                wire.append(
                    {"role": "user", "content": _user_blocks(message, self.native_documents)}
                )
                continue
            blocks: list[dict[str, Any]] = []
            if message.calls:
                remembered = self._signed.get(message.calls[0].id)
                if remembered is None:
                    signed = False
                else:
                    blocks.extend(remembered)
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.calls or ():
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                )
            if blocks:
                wire.append({"role": "assistant", "content": blocks})
        return system, wire, signed

    def _body(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: ProviderStreamOptions,
    ) -> dict[str, Any]:
        refused = self.unsupported(options)
        if refused is not None:
            raise UnsupportedOption(self.name, refused)
        system, wire, signed = self._messages(messages)
        body: dict[str, Any] = {"model": self._model, "max_tokens": self._max_tokens}
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = wire
        body["stream"] = True
        choice = options.tool_choice
        forced = forces_tool(choice)
        level = think_level(options.think, "medium")
        # The API refuses a forced tool while thinking: a caller's forced choice wins the call.
        thinking = level is not None and level != "none" and signed and not forced
        if thinking:
            assert level is not None and level != "none"
            budget = self._budgets[level]
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] = self._max_tokens + budget
        wire_tools = [_tool(tool) for tool in tools]
        answer = answer_format(options)
        wire_choice: dict[str, Any] | None = None
        if choice is not None and (answer is None or forced):
            wire_choice = _tool_choice(choice)
        elif answer is not None:
            # The API refuses a forced tool while thinking; "any" is refused too.
            wire_choice = {"type": "auto"} if thinking else {"type": "tool", "name": SCHEMA_TOOL}
        if answer is not None:
            wire_tools.append(_schema_tool(answer))
        if options.parallel_tool_calls is False and tools and choice != "none":
            # One call per turn at most: a flag of the tool choice ("auto" when none is set).
            wire_choice = {**(wire_choice or {"type": "auto"}), "disable_parallel_tool_use": True}
        if wire_tools:
            body["tools"] = wire_tools
            if wire_choice is not None:
                body["tool_choice"] = wire_choice
        return body
