"""``OllamaProvider``: Ollama's native ``/api/chat``, streamed as newline-delimited JSON.

Each line carries ``message.content`` and / or ``message.thinking`` (when ``think`` is on) and
possibly ``message.tool_calls`` (whole calls, ``function.arguments`` already an object). The
last line has ``done: true``, ``done_reason`` and the counts ``prompt_eval_count`` /
``eval_count``. A failure mid-stream arrives as a line ``{"error": "..."}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from orkestrel.core.documents import documents_text
from orkestrel.core.messages import Message
from orkestrel.core.provider import (
    ProviderStreamItem,
    ProviderStreamOptions,
    ThinkingLevel,
    ToolDefinition,
)
from orkestrel.core.usage import sanitize_usage

from .base import HttpProvider, PendingCall, Turn
from .steering import Unsupported, UnsupportedOption, answer_format, forces_tool
from .wire import (
    decode_json,
    link_tool_messages,
    think_level,
    to_image,
)

__all__ = ["OLLAMA_THINK_VALUES", "OllamaProvider"]

# Thinking level → ``think``. Ollama takes a bool, or "low" / "medium" / "high" on models with
# levels (gpt-oss); other models read any level as "on". Above "high" there is nothing more.
OLLAMA_THINK_VALUES: Final[Mapping[ThinkingLevel, bool | str]] = {
    "none": False,
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "max": "high",
}


class _OllamaTurn(Turn):
    __slots__ = ()

    def feed(self, payload: bytes, out: list[ProviderStreamItem]) -> None:
        try:
            event = decode_json(payload)
        except ValueError:
            raise self.malformed(payload) from None
        if type(event) is not dict:
            raise self.malformed(payload, "line is not a JSON object")
        message = event.get("message")
        if message:
            thinking = message.get("thinking")
            if thinking and type(thinking) is str:
                self.think(thinking, out)
            content = message.get("content")
            if content and type(content) is str:
                self.text(content, out)
            calls = message.get("tool_calls")
            if calls:
                self._calls(calls, payload)
        if event.get("done"):
            self.done = True
            self.stop = event.get("done_reason") or None
            if "prompt_eval_count" in event or "eval_count" in event:
                prompt = event.get("prompt_eval_count") or 0
                completion = event.get("eval_count") or 0
                self.usage = sanitize_usage(
                    {"prompt": prompt, "completion": completion, "total": prompt + completion}
                )
        error = event.get("error")
        if error:
            raise self.fail(f"stream error: {error}", body=payload.decode("utf-8", "replace"))

    def _calls(self, calls: list[Any], payload: bytes) -> None:
        for call in calls:
            function = call.get("function") if type(call) is dict else None
            if type(function) is not dict:
                raise self.malformed(payload, "tool_calls item has no function")
            pending = PendingCall(call.get("id") or None, function.get("name"))
            arguments = function.get("arguments")
            if type(arguments) is str:
                pending.parts.append(arguments)
            else:
                pending.value = arguments if arguments is not None else {}
            # Whole calls arrive one after another; keep them in arrival order.
            self.calls[len(self.calls)] = pending


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    links = link_tool_messages(messages)
    wire: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        entry: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.documents:
            # Ollama takes no documents: the model reads their text after the message's.
            text = documents_text(message.documents)
            entry["content"] = f"{message.content}\n\n{text}" if message.content else text
        if message.role == "assistant" and message.calls:
            entry["tool_calls"] = [
                {"function": {"name": call.name, "arguments": dict(call.arguments)}}
                for call in message.calls
            ]
        elif message.role == "tool":
            name = links[position].name
            if name is not None:
                entry["tool_name"] = name
        if message.images:
            entry["images"] = [to_image(image).data for image in message.images]
        wire.append(entry)
    return wire


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = (
        dict(tool.parameters) if tool.parameters is not None else {"type": "object"}
    )
    return {"type": "function", "function": function}


class OllamaProvider(HttpProvider):
    """A ``Provider`` over Ollama's native ``/api/chat``.

    Takes the same arguments as ``OpenAIProvider``; ``base_url`` defaults to
    ``http://localhost:11434`` and model options (``temperature``, ``num_ctx``...) go in
    ``extra_body={"options": {...}}``.
    """

    default_name = "ollama"
    default_base_url = "http://localhost:11434"
    path = "/api/chat"
    framing = "ndjson"

    @classmethod
    def unsupported(cls, options: ProviderStreamOptions) -> Unsupported | None:
        """What ``/api/chat`` cannot honour: a forced tool call, or one call at most per turn
        (it has neither setting). ``none`` is honoured by offering no tools; a format, strict
        or not, by ``format`` (its sampling follows the schema)."""
        if forces_tool(options.tool_choice):
            return Unsupported(
                "tool_choice", "Ollama's /api/chat cannot make the model call a tool"
            )
        if options.parallel_tool_calls is False:
            return Unsupported(
                "parallel_tool_calls",
                "Ollama's /api/chat cannot keep the model to one tool call per turn",
            )
        return None

    def _turn(self, options: ProviderStreamOptions) -> Turn:
        return _OllamaTurn(self._http.error)

    def _body(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: ProviderStreamOptions,
    ) -> dict[str, Any]:
        refused = self.unsupported(options)
        if refused is not None:
            raise UnsupportedOption(self.name, refused)
        body: dict[str, Any] = {
            "model": self._model,
            "messages": _messages(messages),
            "stream": True,
        }
        if tools and options.tool_choice != "none":
            body["tools"] = [_tool(tool) for tool in tools]
        if options.think is True:
            body["think"] = True
        else:
            level = think_level(options.think, "medium")
            if level is not None:
                body["think"] = OLLAMA_THINK_VALUES[level]
        answer = answer_format(options)
        if answer is not None:
            # ``"json"`` is Ollama's JSON mode; a schema constrains the sampling to it.
            body["format"] = dict(answer.schema) if answer.schema is not None else "json"
        return body
