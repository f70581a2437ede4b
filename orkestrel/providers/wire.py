"""What the three wire protocols share: framing decoders and message / option mapping helpers.

Kept allocation-light on purpose: the decoders run once per network chunk and hand back raw
``bytes`` payloads, so each event costs one ``decode_json`` in the provider and nothing more.

Model text is untrusted even once it parses: JSON lets a server send half a surrogate pair
(``"\\ud83d"`` alone), which Python decodes to a lone surrogate that no UTF-8 encoder accepts.
``decode_json`` and ``parse_arguments`` replace each one with U+FFFD, so every string a provider
hands on (content, thinking, tool names and arguments, error text) encodes cleanly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from orkestrel.core.messages import Message, MessageInput, create_message
from orkestrel.core.provider import (
    THINKING_LEVELS,
    NamedToolChoice,
    ProviderStreamOptions,
    ResponseFormat,
    ThinkingLevel,
    ToolDefinition,
)

from .steering import TOOL_CHOICE_MODES

__all__ = [
    "MAX_LINE_BYTES",
    "Image",
    "LineTooLong",
    "NDJSONDecoder",
    "SSEDecoder",
    "ToolLink",
    "decode_json",
    "link_tool_messages",
    "parse_arguments",
    "scrub_text",
    "think_level",
    "to_image",
    "to_messages",
    "to_options",
    "to_tools",
]

_DATA: Final = b"data:"
# The longest line (bytes, without its newline) a decoder holds before refusing the stream:
# a server that never sends a newline must not grow the buffer without bound.
MAX_LINE_BYTES: Final = 1 << 20


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def scrub_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object when it has none)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def _scrub(value: object) -> object:
    # A decoded JSON value with every string (keys included) scrubbed.
    if type(value) is str:
        return scrub_text(value)
    if type(value) is dict:
        return {scrub_text(key): _scrub(item) for key, item in value.items()}
    if type(value) is list:
        return [_scrub(item) for item in value]
    return value


def decode_json(payload: bytes | str) -> Any:
    """``json.loads`` of one event, with any lone surrogate in its strings made U+FFFD.

    Raises:
        ValueError: the payload is not JSON.
    """
    value = json.loads(payload)
    if isinstance(payload, str):
        suspect = "\\ud" in payload or "\\uD" in payload or not payload.isascii()
    else:
        # Only these can decode to a surrogate: a ``\\uD800``-``\\uDFFF`` escape, or the raw
        # bytes ``ED A0``-``ED BF`` (``json.loads`` decodes bytes with ``surrogatepass``). A
        # cheap test, so a clean event (nearly every one) is never walked.
        suspect = (b"\\u" in payload and (b"\\ud" in payload or b"\\uD" in payload)) or (
            not payload.isascii() and b"\xed" in payload
        )
    return _scrub(value) if suspect else value


class LineTooLong(ValueError):
    """A framed line (or one SSE event's data) grew past the decoder's ``max_line``."""

    def __init__(self, limit: int, what: str = "a line") -> None:
        super().__init__(f"provider sent {what} longer than {limit} bytes")
        self.limit = limit


class _Lines:
    """Splits a byte stream into lines in linear time, holding at most ``max_line`` bytes.

    The unfinished tail is kept as a list of parts and joined once, when its newline arrives:
    each byte is scanned a bounded number of times however the body is cut.
    """

    __slots__ = ("_held", "_parts", "max_line")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        if isinstance(max_line, bool) or not isinstance(max_line, int) or max_line < 1:
            raise ValueError(f"max_line must be a positive int, not {max_line!r}")
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._held = 0

    def _lines(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes (without their ``\\n``); the rest is held."""
        end = chunk.find(b"\n")
        if end < 0:
            if chunk:
                self._hold(chunk)
            return []
        if self._parts:
            self._parts.append(chunk[:end])
            first = b"".join(self._parts)
            self._parts = []
            self._held = 0
            lines = [first, *chunk[end + 1 :].split(b"\n")]
        else:
            lines = chunk.split(b"\n")
        tail = lines.pop()
        limit = self.max_line
        for line in lines:
            if len(line) > limit:
                raise LineTooLong(limit)
        if tail:
            self._hold(tail)
        return lines

    def _hold(self, part: bytes) -> None:
        self._held += len(part)
        if self._held > self.max_line:
            raise LineTooLong(self.max_line)
        self._parts.append(part)

    def _rest(self) -> bytes:
        """The held, unfinished line (emptied)."""
        rest = b"".join(self._parts)
        self._parts = []
        self._held = 0
        return rest


class SSEDecoder(_Lines):
    """Server-sent events → the ``data`` payload of each event, as bytes.

    ``event:`` / ``id:`` / ``retry:`` fields and ``:`` comments are dropped: the protocols
    here repeat the event name inside the JSON ``type``. Multi-line data joins with ``\\n``.
    A line, or an event's joined data, longer than ``max_line`` bytes raises ``LineTooLong``.
    """

    __slots__ = ("_data", "_size")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        super().__init__(max_line)
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume one network chunk; return the payloads of the events it completed."""
        events: list[bytes] = []
        data = self._data
        size = self._size
        limit = self.max_line
        for line in self._lines(chunk):
            if line and line[-1] == 13:  # b"\r"
                line = line[:-1]
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = []
                    size = 0
            elif line.startswith(_DATA):
                value = line[5:]
                value = value[1:] if value[:1] == b" " else value
                size += len(value) + 1
                if size > limit:
                    raise LineTooLong(limit, "an event")
                data.append(value)
        self._data = data
        self._size = size
        return events

    def flush(self) -> list[bytes]:
        """Settle the end of the body: a last event missing its blank line still counts."""
        events = self.feed(b"\n\n") if self._parts or self._data else []
        self._rest()
        return events


class NDJSONDecoder(_Lines):
    """Newline-delimited JSON → one payload per non-blank line, as bytes.

    A line longer than ``max_line`` bytes raises ``LineTooLong``.
    """

    __slots__ = ()

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume one network chunk; return the complete lines it finished."""
        return [line for line in self._lines(chunk) if line.strip()]

    def flush(self) -> list[bytes]:
        """Settle the end of the body: a last line without its newline still counts."""
        tail = self._rest()
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
        out.append(
            ToolDefinition(
                tool["name"], tool.get("description"), tool.get("parameters"), tool.get("strict")
            )
        )
    return out


def to_options(
    options: ProviderStreamOptions | Mapping[str, Any] | None,
) -> ProviderStreamOptions:
    """Coerce per-call options; ``think`` must be a bool or one of ``THINKING_LEVELS``,
    ``tool_choice`` a mode of ``TOOL_CHOICE_MODES`` or a ``NamedToolChoice``."""
    if options is None:
        return ProviderStreamOptions()
    if isinstance(options, Mapping):
        options = ProviderStreamOptions(
            think=options.get("think"),
            schema=options.get("schema"),
            tool_choice=options.get("tool_choice"),
            parallel_tool_calls=options.get("parallel_tool_calls"),
            response_format=options.get("response_format"),
        )
    if not isinstance(options, ProviderStreamOptions):
        raise TypeError("options must be ProviderStreamOptions, a mapping or None")
    think = options.think
    if think is not None and not isinstance(think, bool) and think not in THINKING_LEVELS:
        raise ValueError(f"options.think must be a bool or one of {THINKING_LEVELS}, not {think!r}")
    if options.schema is not None and not isinstance(options.schema, Mapping):
        raise TypeError("options.schema must be a JSON-Schema mapping")
    choice = options.tool_choice
    if isinstance(choice, NamedToolChoice):
        if not isinstance(choice.name, str) or not choice.name:
            raise ValueError("options.tool_choice must name a tool")
    elif choice is not None and choice not in TOOL_CHOICE_MODES:
        raise ValueError(
            f"options.tool_choice must be one of {TOOL_CHOICE_MODES} or a NamedToolChoice, "
            f"not {choice!r}"
        )
    if options.parallel_tool_calls is not None and not isinstance(
        options.parallel_tool_calls, bool
    ):
        raise TypeError("options.parallel_tool_calls must be a bool")
    answer = options.response_format
    if answer is not None:
        if not isinstance(answer, ResponseFormat):
            raise TypeError("options.response_format must be a ResponseFormat")
        if answer.type == "json_schema" and not isinstance(answer.schema, Mapping):
            raise TypeError("a json_schema response_format needs a JSON-Schema mapping")
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
        value = decode_json(raw)
        if isinstance(value, str):
            value = decode_json(value)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
