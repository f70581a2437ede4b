"""What the three wire protocols share: framing decoders and message / option mapping helpers.

Kept allocation-light on purpose: the decoders run once per network chunk and hand back raw
``bytes`` payloads, so each event costs one ``json.loads`` in the provider and nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from orkestrel.core.messages import Message, MessageInput, create_message
from orkestrel.core.provider import (
    THINKING_LEVELS,
    ProviderStreamOptions,
    ThinkingLevel,
    ToolDefinition,
)

__all__ = [
    "Image",
    "NDJSONDecoder",
    "SSEDecoder",
    "ToolLink",
    "link_tool_messages",
    "parse_arguments",
    "think_level",
    "to_image",
    "to_messages",
    "to_options",
    "to_tools",
]

_DATA: Final = b"data:"


class SSEDecoder:
    """Server-sent events → the ``data`` payload of each event, as bytes.

    ``event:`` / ``id:`` / ``retry:`` fields and ``:`` comments are dropped: the protocols
    here repeat the event name inside the JSON ``type``. Multi-line data joins with ``\\n``.
    """

    __slots__ = ("_data", "_tail")

    def __init__(self) -> None:
        self._tail = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume one network chunk; return the payloads of the events it completed."""
        if self._tail:
            chunk = self._tail + chunk
        lines = chunk.split(b"\n")
        self._tail = lines.pop()
        events: list[bytes] = []
        data = self._data
        for line in lines:
            if line and line[-1] == 13:  # b"\r"
                line = line[:-1]
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = []
            elif line.startswith(_DATA):
                value = line[5:]
                data.append(value[1:] if value[:1] == b" " else value)
        self._data = data
        return events

    def flush(self) -> list[bytes]:
        """Settle the end of the body: a last event missing its blank line still counts."""
        events = self.feed(b"\n\n") if self._tail or self._data else []
        self._tail = b""
        return events


class NDJSONDecoder:
    """Newline-delimited JSON → one payload per non-blank line, as bytes."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume one network chunk; return the complete lines it finished."""
        if self._tail:
            chunk = self._tail + chunk
        lines = chunk.split(b"\n")
        self._tail = lines.pop()
        return [line for line in lines if line.strip()]

    def flush(self) -> list[bytes]:
        """Settle the end of the body: a last line without its newline still counts."""
        tail, self._tail = self._tail, b""
        return [tail] if tail.strip() else []


def to_messages(messages: Sequence[MessageInput]) -> list[Message]:
    """Coerce the caller's messages (``Message`` or mapping) into ``Message``s."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of messages")
    return [m if isinstance(m, Message) else create_message(m) for m in messages]


def to_tools(tools: Sequence[ToolDefinition | Mapping[str, Any]] | None) -> list[ToolDefinition]:
    """Coerce the advertised tools (``ToolDefinition`` or mapping); ``None`` means none."""
    if tools is None:
        return []
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise TypeError("tools must be a list of tool definitions")
    out: list[ToolDefinition] = []
    for tool in tools:
        if isinstance(tool, ToolDefinition):
            out.append(tool)
            continue
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise TypeError("tools items must be tool definitions with a string name")
        out.append(ToolDefinition(tool["name"], tool.get("description"), tool.get("parameters")))
    return out


def to_options(
    options: ProviderStreamOptions | Mapping[str, Any] | None,
) -> ProviderStreamOptions:
    """Coerce per-call options; ``think`` must be a bool or one of ``THINKING_LEVELS``."""
    if options is None:
        return ProviderStreamOptions()
    if isinstance(options, Mapping):
        options = ProviderStreamOptions(options.get("think"), options.get("schema"))
    if not isinstance(options, ProviderStreamOptions):
        raise TypeError("options must be ProviderStreamOptions, a mapping or None")
    think = options.think
    if think is not None and not isinstance(think, bool) and think not in THINKING_LEVELS:
        raise ValueError(f"options.think must be a bool or one of {THINKING_LEVELS}, not {think!r}")
    if options.schema is not None and not isinstance(options.schema, Mapping):
        raise TypeError("options.schema must be a JSON-Schema mapping")
    return options


def think_level(think: bool | ThinkingLevel | None, default: ThinkingLevel) -> ThinkingLevel | None:
    """``None`` (not asked), else the level: ``True`` is ``default``, ``False`` is ``"none"``."""
    if think is None:
        return None
    if think is True:
        return default
    if think is False:
        return "none"
    return think


@dataclass(frozen=True, slots=True)
class Image:
    """One image ready for the wire: its media type and bare base64 data."""

    media_type: str
    data: str

    @property
    def url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


# Magic numbers as they look once base64-encoded.
_SIGNATURES: Final = (
    ("iVBORw0KGgo", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
)


def to_image(value: str) -> Image:
    """Split a data URL, or sniff the type of bare base64 (PNG when unknown)."""
    if value.startswith("data:"):
        header, _, data = value.partition(",")
        media_type = header[5:].split(";", 1)[0] or "image/png"
        return Image(media_type, data)
    for prefix, media_type in _SIGNATURES:
        if value.startswith(prefix):
            return Image(media_type, value)
    return Image("image/png", value)


@dataclass(frozen=True, slots=True)
class ToolLink:
    """The call a ``tool`` message answers: its id and tool name (``None`` when unknown)."""

    id: str | None
    name: str | None


def link_tool_messages(messages: Sequence[Message]) -> dict[int, ToolLink]:
    """Pair each ``tool`` message (by position) with the assistant call it answers.

    ``tool_call_id`` wins; a tool message without one takes the preceding assistant turn's
    next unanswered call, in order.
    """
    links: dict[int, ToolLink] = {}
    pending: list[ToolLink] = []
    names: dict[str, str] = {}
    for position, message in enumerate(messages):
        if message.role == "assistant":
            pending = [ToolLink(call.id, call.name) for call in message.calls or ()]
            names.update((call.id, call.name) for call in message.calls or ())
        elif message.role == "tool":
            wanted = message.tool_call_id
            if wanted is not None:
                pending = [link for link in pending if link.id != wanted]
                links[position] = ToolLink(wanted, names.get(wanted))
            elif pending:
                links[position] = pending.pop(0)
            else:
                links[position] = ToolLink(None, None)
    return links


def parse_arguments(raw: object) -> dict[str, Any] | None:
    """Tool-call arguments as a dict: ``None`` when they do not parse to a JSON object.

    Empty arguments are ``{}``; a JSON string holding JSON (double-encoded) is unwrapped once.
    """
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        return None
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
