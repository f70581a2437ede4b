"""Frame payloads for committed messages and compacted sections."""

from __future__ import annotations

from typing import Any

from conversations.render_pool import render_all
from orkestrel.core import Message

__all__ = ["committed_payload", "section_payload"]


def section_payload(section: Any) -> dict[str, Any]:
    """A compacted section for the ``compaction`` frame."""
    return {
        "id": section.id,
        "summary": section.summary,
        "messages": [{"id": m.id, "role": m.role, "content": m.content} for m in section.messages],
    }


def joined(parts: list[str]) -> str:
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""


def reason_text(reason: object) -> str:
    return reason if isinstance(reason, str) else "aborted"


def committed_payload(messages: list[Message]) -> list[dict[str, Any]]:
    """The ``committed`` frame's messages; blocks on rendering (call it off the event loop)."""
    answers = [m for m in messages if m.role == "assistant"]
    html = dict(
        zip([id(m) for m in answers], render_all([m.content for m in answers]), strict=True)
    )
    return [
        {
            "id": m.id,
            "role": m.role,
            "content": m.content,
            "html": html.get(id(m)),
            "calls": [c.to_dict() for c in m.calls] if m.calls else None,
            "tool_call_id": m.tool_call_id,
        }
        for m in messages
    ]
