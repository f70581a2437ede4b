"""Websocket frame shapes, validated at the boundary (client → server) and built for output.

The protocol is documented in the README ("Live chat: the websocket protocol").
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from orkestrel.core import AgentResult, ToolCall, ToolResult

__all__ = [
    "ClientFrame",
    "FrameError",
    "IMAGE_SIGNATURES",
    "MAX_FRAME_BYTES",
    "is_denial",
    "parse_client_frame",
    "result_payload",
    "tool_payload",
]

CLIENT_TYPES = frozenset({"send", "abort", "compact", "resync"})
IMAGE_SIGNATURES = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
)
MAX_IMAGES = 8
MAX_FRAME_BYTES = 32 * 1024 * 1024


class FrameError(ValueError):
    """A client frame the server refuses; ``code`` goes into the error frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class ClientFrame:
    type: str
    content: str = ""
    images: tuple[str, ...] = ()
    nonce: str | None = None
    focus: str | None = None


def _limits() -> tuple[int, int]:
    config = getattr(settings, "ORKESTREL", {})
    return config.get("MAX_MESSAGE_CHARS", 100_000), config.get("MAX_IMAGE_BYTES", 5 * 2**20)


def _image(value: object, index: int, max_bytes: int) -> str:
    if not isinstance(value, str):
        raise FrameError("invalid", f"images[{index}] must be a base64 string")
    if len(value) * 3 // 4 > max_bytes:
        raise FrameError("too_large", f"images[{index}] is larger than {max_bytes} bytes")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise FrameError("invalid", f"images[{index}] is not valid base64") from None
    is_webp = raw[:4] == b"RIFF" and raw[8:12] == b"WEBP"
    if not (is_webp or raw.startswith(IMAGE_SIGNATURES)):
        raise FrameError("invalid", f"images[{index}] is not a PNG, JPEG, GIF or WebP image")
    return value


def parse_client_frame(text: str | None) -> ClientFrame:
    """Validate one client frame; raise ``FrameError`` naming what is wrong."""
    if text is None:
        raise FrameError("invalid", "frames must be JSON text")
    if len(text) > MAX_FRAME_BYTES:
        raise FrameError("too_large", "frame too large")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise FrameError("invalid", "frame is not valid JSON") from None
    if not isinstance(data, Mapping):
        raise FrameError("invalid", "frame must be a JSON object")
    kind = data.get("type")
    if kind not in CLIENT_TYPES:
        raise FrameError("unknown_type", f"unknown frame type {kind!r}")
    max_chars, max_image = _limits()
    if kind == "send":
        content = data.get("content")
        if not isinstance(content, str):
            raise FrameError("invalid", "send.content must be a string")
        if len(content) > max_chars:
            raise FrameError("too_large", f"send.content is longer than {max_chars} characters")
        images = data.get("images") or []
        if not isinstance(images, list):
            raise FrameError("invalid", "send.images must be a list")
        if len(images) > MAX_IMAGES:
            raise FrameError("too_large", f"at most {MAX_IMAGES} images per message")
        checked = tuple(_image(item, i, max_image) for i, item in enumerate(images))
        if not content.strip() and not checked:
            raise FrameError("invalid", "send needs content or an image")
        nonce = data.get("nonce")
        if nonce is not None and (not isinstance(nonce, str) or len(nonce) > 100):
            raise FrameError("invalid", "send.nonce must be a short string")
        return ClientFrame("send", content=content, images=checked, nonce=nonce)
    if kind == "compact":
        focus = data.get("focus")
        if focus is not None and (not isinstance(focus, str) or len(focus) > 2000):
            raise FrameError("invalid", "compact.focus must be a string of at most 2000 characters")
        return ClientFrame("compact", focus=focus or None)
    return ClientFrame(kind)


def is_denial(error: str | None) -> bool:
    """Whether a tool result's error is the authority's refusal (not the tool failing)."""
    return error is not None and (error.startswith("denied:") or error == "denied by authority")


def tool_payload(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The ``call`` / ``result`` / ``denied`` / ``reason`` fields of a ``tool`` frame."""
    error = result.error
    denied = is_denial(error)
    outcome: dict[str, Any] = {"error": error} if error is not None else {"value": result.value}
    reason = None
    if denied and error.startswith("denied:"):
        reason = error.removeprefix("denied:").strip()
    return {
        "call": {"id": call.id, "name": call.name, "arguments": dict(call.arguments)},
        "result": _jsonable(outcome),
        "denied": denied,
        "reason": reason,
    }


def result_payload(result: AgentResult) -> dict[str, Any]:
    return {
        "content": result.content,
        "thinking": result.thinking,
        "usage": result.usage.to_dict() if result.usage else None,
        "partial": result.partial,
        "stop": result.stop,
    }


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)
