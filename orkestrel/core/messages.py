"""Messages, tool calls and tool results: the records a conversation is made of."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, get_args

from .documents import Document, to_document

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # ``typing.TypeIs`` from Python 3.13

__all__ = [
    "Message",
    "MessageInput",
    "MessageRole",
    "ToolCall",
    "ToolCallInput",
    "ToolOutcome",
    "ToolOutcomeKind",
    "ToolResult",
    "create_message",
    "is_message",
    "is_tool_call",
    "message_to_dict",
    "mint_id",
    "to_tool_call",
]

MessageRole = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(get_args(MessageRole))


_VERSION_4 = (0x4000 << 64) | (0x8000 << 48)
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))


def mint_id() -> str:
    """A fresh random (version 4) UUID string."""
    # uuid.uuid4() validates its fields on every call; this is the same value, 5x cheaper,
    # and ids are minted for every message of every turn.
    value = (int.from_bytes(os.urandom(16)) & _VERSION_MASK) | _VERSION_4
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model emitted: ``arguments`` is the parsed JSON object.

    ``error`` is set when the model's arguments could not be parsed into an object (they are
    then ``{}``): the call is answered with that error instead of running the tool.
    """

    id: str
    name: str
    arguments: Mapping[str, Any]
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}
        if self.error is not None:
            data["error"] = self.error
        return data


ToolOutcomeKind = Literal["value", "error", "denied", "cancelled"]
OUTCOME_KINDS: frozenset[str] = frozenset(get_args(ToolOutcomeKind))


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How a tool call ended, as data: what a transcript shows without reading the text.

    ``reason`` is a denial's reason; ``rule`` the index of the authority rule that denied
    (``None``: the fallback decided); ``display`` what the tool showed the user (an edit's diff),
    kept with the call so a transcript shows it again. The model reads the tool message's text,
    not this.
    """

    kind: ToolOutcomeKind
    reason: str | None = None
    rule: int | None = None
    display: Any = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.reason is not None:
            data["reason"] = self.reason
        if self.rule is not None:
            data["rule"] = self.rule
        if self.display is not None:
            data["display"] = _plain(self.display)
        return data


def _plain(value: Any) -> Any:
    """``value`` if it is JSON, else its text: a snapshot must survive ``json.dumps``."""
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return str(value)
    return value


def to_outcome(value: ToolOutcome | Mapping[str, Any]) -> ToolOutcome:
    """Coerce a mapping into a ``ToolOutcome``; raise ``TypeError`` naming the bad field."""
    if isinstance(value, ToolOutcome):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"tool outcome must be a mapping, not {type(value).__name__}")
    kind, reason, rule = value.get("kind"), value.get("reason"), value.get("rule")
    if kind not in OUTCOME_KINDS:
        raise TypeError(f"tool outcome kind must be one of {sorted(OUTCOME_KINDS)}")
    if reason is not None and not isinstance(reason, str):
        raise TypeError("tool outcome reason must be a string")
    if rule is not None and (not isinstance(rule, int) or isinstance(rule, bool)):
        raise TypeError("tool outcome rule must be an integer")
    return ToolOutcome(kind, reason, rule, value.get("display"))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one ``ToolCall``: ``value`` on success, ``error`` on failure.

    A denied or cancelled call has an ``error`` too (the text the model reads); ``denial``
    and ``cancelled`` say which it was, so nothing downstream parses that text.

    A tool that returned a payload (see ``tools.read_payload``) has its ``result`` as
    ``value``, its ``display`` here (shown to the user, never sent to the model) and its
    ``system`` texts (appended as system messages after the turn's tool messages).
    """

    id: str
    name: str
    value: Any = None
    error: str | None = None
    denial: ToolOutcome | None = None
    cancelled: bool = False
    display: Any = None
    system: tuple[str, ...] | None = None

    @property
    def outcome(self) -> ToolOutcome:
        """The call's outcome as data."""
        if self.denial is not None:
            return self.denial
        if self.cancelled:
            return ToolOutcome("cancelled")
        if self.error is not None:
            return ToolOutcome("error")
        return ToolOutcome("value", display=self.display)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name}
        if self.error is not None:
            data["error"] = self.error
        else:
            data["value"] = self.value
        if self.display is not None:
            data["display"] = self.display
        if self.system is not None:
            data["system"] = list(self.system)
        return data


@dataclass(frozen=True, slots=True)
class Message:
    """One stored turn; ``calls`` only on an assistant turn that called tools.

    ``tool_call_id`` links a ``tool`` message to the call it answers (providers need it).
    """

    id: str
    role: MessageRole
    content: str
    calls: tuple[ToolCall, ...] | None = None
    images: tuple[str, ...] | None = None
    tool_call_id: str | None = None
    # A tool message's outcome (``None`` on other roles, and on tool messages of old records).
    outcome: ToolOutcome | None = None
    # Documents a user attached (``orkestrel.core.documents``); ``None`` on other messages.
    documents: tuple[Document, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return message_to_dict(self)


ToolCallInput = ToolCall | Mapping[str, Any]
MessageInput = Message | Mapping[str, Any]


class ToolCallDict(TypedDict):
    """A tool call as plain JSON: what ``is_tool_call`` accepts (``ToolCall.to_dict``)."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    error: NotRequired[str | None]


class MessageDict(TypedDict):
    """A message as plain JSON: what ``is_message`` accepts (``message_to_dict``)."""

    id: str
    role: MessageRole
    content: str
    calls: NotRequired[Sequence[ToolCallDict] | None]
    images: NotRequired[Sequence[str] | None]
    tool_call_id: NotRequired[str | None]
    outcome: NotRequired[Mapping[str, Any] | None]
    documents: NotRequired[Sequence[Mapping[str, Any]] | None]


def to_tool_call(value: ToolCallInput) -> ToolCall:
    """Coerce a mapping into a ``ToolCall``; raise ``TypeError`` naming the bad field."""
    if isinstance(value, ToolCall):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"tool call must be a mapping, not {type(value).__name__}")
    call_id, name, arguments = value.get("id"), value.get("name"), value.get("arguments", {})
    if not isinstance(call_id, str):
        raise TypeError("tool call id must be a string")
    if not isinstance(name, str) or not name:
        raise TypeError("tool call name must be a non-empty string")
    if not isinstance(arguments, Mapping):
        raise TypeError("tool call arguments must be a mapping")
    error = value.get("error")
    if error is not None and not isinstance(error, str):
        raise TypeError("tool call error must be a string")
    return ToolCall(call_id, name, dict(arguments), error)


def create_message(value: MessageInput, id: str | None = None) -> Message:
    """Build an immutable ``Message`` from a mapping (or re-key a ``Message``), minting its id.

    Raises ``TypeError`` / ``ValueError`` naming the offending field.
    """
    if isinstance(value, Message):
        if id is None or id == value.id:
            return value
        return Message(
            id,
            value.role,
            value.content,
            value.calls,
            value.images,
            value.tool_call_id,
            value.outcome,
            value.documents,
        )
    if not isinstance(value, Mapping):
        raise TypeError(f"message must be a mapping, not {type(value).__name__}")
    role = value.get("role")
    if role not in ROLES:
        raise ValueError(f"message role must be one of {sorted(ROLES)}, not {role!r}")
    content = value.get("content", "")
    if not isinstance(content, str):
        raise TypeError("message content must be a string")
    raw_calls = value.get("calls")
    calls: tuple[ToolCall, ...] | None = None
    if raw_calls is not None:
        if isinstance(raw_calls, str | bytes) or not isinstance(raw_calls, Sequence):
            raise TypeError("message calls must be a list of tool calls")
        calls = tuple(to_tool_call(call) for call in raw_calls)
    raw_images = value.get("images")
    images: tuple[str, ...] | None = None
    if raw_images is not None:
        if isinstance(raw_images, str | bytes) or not isinstance(raw_images, Sequence):
            raise TypeError("message images must be a list of base64 strings")
        if not all(isinstance(image, str) for image in raw_images):
            raise TypeError("message images must be base64 strings")
        images = tuple(raw_images)
    tool_call_id = value.get("tool_call_id")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise TypeError("message tool_call_id must be a string")
    given = value.get("id") if id is None else id
    if given is not None and not isinstance(given, str):
        raise TypeError("message id must be a string")
    raw_outcome = value.get("outcome")
    outcome = to_outcome(raw_outcome) if raw_outcome is not None else None
    return Message(
        given or mint_id(),
        role,
        content,
        calls,
        images,
        tool_call_id,
        outcome,
        _documents(value.get("documents")),
    )


def _documents(raw: object) -> tuple[Document, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        raise TypeError("message documents must be a list of documents")
    return tuple(to_document(item) for item in raw)


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-ready dict; absent optional fields are omitted."""
    data: dict[str, Any] = {"id": message.id, "role": message.role, "content": message.content}
    if message.calls is not None:
        data["calls"] = [call.to_dict() for call in message.calls]
    if message.images is not None:
        data["images"] = list(message.images)
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.outcome is not None:
        data["outcome"] = message.outcome.to_dict()
    if message.documents is not None:
        data["documents"] = [document.to_dict() for document in message.documents]
    return data


def is_tool_call(value: object) -> TypeIs[ToolCall | ToolCallDict]:
    """Whether ``value`` is structurally a tool call (string id and name, mapping arguments)."""
    if isinstance(value, ToolCall):
        value = value.to_dict()
    try:
        return (
            isinstance(value, Mapping)
            and isinstance(value.get("id"), str)
            and isinstance(value.get("name"), str)
            and isinstance(value.get("arguments"), Mapping)
            and (value.get("error") is None or isinstance(value.get("error"), str))
        )
    except Exception:  # noqa: BLE001 - a guard is total
        return False


def is_message(value: object) -> TypeIs[Message | MessageDict]:
    """Whether ``value`` is structurally a message; fails closed on any malformed element."""
    try:
        if isinstance(value, Message):
            value = message_to_dict(value)
        if not isinstance(value, Mapping):
            return False
        if not isinstance(value.get("id"), str) or value.get("role") not in ROLES:
            return False
        if not isinstance(value.get("content"), str):
            return False
        if "calls" in value and value["calls"] is not None:
            calls = value["calls"]
            if not isinstance(calls, list | tuple) or not all(is_tool_call(c) for c in calls):
                return False
        if "images" in value and value["images"] is not None:
            images = value["images"]
            if not isinstance(images, list | tuple) or not all(isinstance(i, str) for i in images):
                return False
        tool_call_id = value.get("tool_call_id")
        if tool_call_id is not None and not isinstance(tool_call_id, str):
            return False
        outcome = value.get("outcome")
        if outcome is not None:
            to_outcome(outcome)
        _documents(value.get("documents"))
        return True
    except Exception:  # noqa: BLE001 - a guard is total
        return False
