"""Frame payloads for committed messages and compacted sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conversations.documents import document_payloads
from conversations.render_pool import render_all
from conversations.writer import Thought
from orkestrel.core import Message
from orkestrel.protocol import MessagePayload, SectionPayload, message_payload

__all__ = ["committed_payload", "compaction_payload"]


def compaction_payload(section: Any) -> SectionPayload:
    """A compacted section for the ``compaction`` frame (its originals unrendered)."""
    return {
        "id": section.id,
        "summary": section.summary,
        "html": "",
        "count": len(section.messages),
        "messages": [_payload(m) for m in section.messages],
    }


def _payload(message: Message, html: str = "", thought: Thought | None = None) -> MessagePayload:
    return message_payload(
        id=message.id,
        role=message.role,
        content=message.content,
        html=html,
        calls=[c.to_dict() for c in message.calls] if message.calls else None,
        tool_call_id=message.tool_call_id,
        images_count=len(message.images or ()),
        documents=document_payloads(message.documents),
        thinking=thought.text if thought is not None else "",
        thinking_ms=thought.ms if thought is not None else None,
    )


def joined(parts: list[str]) -> str:
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""


def reason_text(reason: object) -> str:
    return reason if isinstance(reason, str) else "aborted"


def committed_payload(
    messages: list[Message], thoughts: Mapping[str, Thought] | None = None
) -> list[MessagePayload]:
    """The ``committed`` frame's messages with their reasoning (``thoughts``, by message id);
    blocks on rendering (call it off the event loop)."""
    thoughts = thoughts or {}
    answers = [m for m in messages if m.role == "assistant"]
    html = dict(
        zip([id(m) for m in answers], render_all([m.content for m in answers]), strict=True)
    )
    return [_payload(m, html.get(id(m), ""), thoughts.get(m.id)) for m in messages]
