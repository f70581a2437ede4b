"""Channel-layer groups of a conversation, and whether the layer reaches other processes."""

from __future__ import annotations

from typing import Any

__all__ = ["group_name", "is_shared", "join_group"]


def is_shared(layer: Any) -> bool:
    """Whether ``layer`` reaches other processes (the in-memory layer does not)."""
    return layer is not None and type(layer).__name__ != "InMemoryChannelLayer"


def group_name(conversation_id: str) -> str:
    """The channel-layer group of one conversation's sockets."""
    return f"conversation.{conversation_id}"


def join_group(conversation_id: str) -> str:
    """The group of the process running the conversation's answer (snapshot requests)."""
    return f"conversation.{conversation_id}.join"
