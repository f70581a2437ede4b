"""The provider contract: the one pluggable boundary between the kit and a model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .messages import Message, ToolCall
from .usage import TokenUsage

if TYPE_CHECKING:
    from .abort import AbortSignal

__all__ = [
    "THINKING_LEVELS",
    "ContentDelta",
    "ContextFormat",
    "ContextSectionFormat",
    "NamedToolChoice",
    "Provider",
    "ProviderDelta",
    "ProviderResult",
    "ProviderStreamItem",
    "ProviderStreamOptions",
    "ResponseFormat",
    "ThinkingDelta",
    "ThinkingLevel",
    "ToolChoice",
    "ToolDefinition",
]

ThinkingLevel = Literal["none", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("none", "low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it: name, description and JSON-Schema ``parameters``, and
    the client's ``strict`` flag (``None``: the model server's default), sent as given."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    strict: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            data["description"] = self.description
        if self.parameters is not None:
            data["parameters"] = dict(self.parameters)
        if self.strict is not None:
            data["strict"] = self.strict
        return data


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """A piece of the answer text."""

    text: str
    type: Literal["content"] = "content"


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of live reasoning, kept apart from the answer."""

    text: str
    type: Literal["thinking"] = "thinking"


ProviderDelta = ContentDelta | ThinkingDelta


@dataclass(frozen=True, slots=True)
class ProviderResult:
    """One assembled turn: clean ``content``, separated ``thinking``, tool calls and usage."""

    content: str
    thinking: str | None = None
    tools: tuple[ToolCall, ...] | None = None
    usage: TokenUsage | None = None
    # Why the model stopped, as the wire said it ("stop", "length", "tool_calls", ...).
    stop_reason: str | None = None


ProviderStreamItem = ContentDelta | ThinkingDelta | ProviderResult


@dataclass(frozen=True, slots=True)
class NamedToolChoice:
    """A ``tool_choice`` that makes the model call the tool ``name``."""

    name: str
    type: Literal["function"] = "function"


# Whether the model may call tools (``auto``), must not (``none``), must call one
# (``required``), or must call a named one.
ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseFormat:
    """The answer's format as a client asked for it: a JSON Schema with its ``name``,
    ``description`` and ``strict`` flag (``json_schema``), or any JSON object
    (``json_object``, no schema)."""

    type: Literal["json_schema", "json_object"]
    schema: Mapping[str, Any] | None = None
    name: str | None = None
    description: str | None = None
    strict: bool | None = None


@dataclass(frozen=True, slots=True)
class ProviderStreamOptions:
    """Per-call options: ``think`` (bool or a thinking level) and a JSON-Schema ``schema``.

    ``tool_choice``, ``parallel_tool_calls`` and ``response_format`` (which refines
    ``schema``) are sent as asked when tools or a format are in play; ``None`` leaves the
    model server's default. A provider that cannot honour one refuses the call rather than
    drop it.
    """

    think: bool | ThinkingLevel | None = None
    schema: Mapping[str, Any] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None


@dataclass(frozen=True, slots=True)
class ContextSectionFormat:
    """One context section's optional overrides: ``open`` line, per-item ``render``, ``close``."""

    open: str | None = None
    render: Callable[[Any], str] | None = None
    close: str | None = None


@dataclass(frozen=True, slots=True)
class ContextFormat:
    """A provider's preferred framing, keyed by section kind (the cascade's provider level)."""

    instructions: ContextSectionFormat | None = None


@runtime_checkable
class Provider(Protocol):
    """The inference boundary: turn messages (+ tools) into one turn, whole or streamed.

    ``stream`` is an async generator yielding ``ContentDelta`` / ``ThinkingDelta`` and, last,
    the assembled ``ProviderResult``; an abort mid-stream raises ``ProviderAbortError``.
    """

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def format(self) -> ContextFormat | None: ...

    async def generate(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> ProviderResult: ...

    def stream(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> AsyncIterator[ProviderStreamItem]: ...
