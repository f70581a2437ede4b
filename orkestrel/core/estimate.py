"""Provider-agnostic token estimates (a deliberate ``ceil(len / 4)`` approximation)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from .constants import IMAGE_TOKEN_ESTIMATE, MESSAGE_TOKEN_OVERHEAD
from .documents import documents_text
from .messages import Message

__all__ = ["UNSERIALIZABLE_CALL_ESTIMATE", "estimate_messages", "estimate_tokens"]

# What a call whose arguments cannot be serialized contributes instead of its JSON length.
UNSERIALIZABLE_CALL_ESTIMATE = 16


def estimate_tokens(text: str) -> int:
    """Estimate a string's token footprint as ``ceil(len(text) / 4)``."""
    return -(-len(text) // 4)


def _call_estimate(message: Message) -> int:
    total = 0
    for call in message.calls or ():
        try:
            payload = json.dumps({"name": call.name, "arguments": call.arguments}, default=str)
        except (TypeError, ValueError, RecursionError):
            total += UNSERIALIZABLE_CALL_ESTIMATE
            continue
        total += estimate_tokens(payload)
    return total


def estimate_messages(messages: Iterable[Message]) -> int:
    """Sum content estimates, per-message overhead, tool-call JSON, images and documents'
    text (what a model without document input reads). Never raises."""
    total = 0
    for message in messages:
        total += estimate_tokens(message.content) + MESSAGE_TOKEN_OVERHEAD
        if message.calls:
            total += _call_estimate(message)
        if message.images:
            total += IMAGE_TOKEN_ESTIMATE * len(message.images)
        if message.documents:
            total += estimate_tokens(documents_text(message.documents))
    return total
