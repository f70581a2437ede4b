"""Builders shared by the conversations tests: real kit conversations to save."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from asgiref.sync import async_to_sync

from orkestrel.core import Conversation, Message, create_conversation


async def join(messages: Sequence[Message]) -> str:
    """A deterministic summarizer: the folded contents, joined."""
    return " | ".join(message.content for message in messages)


def new_id() -> str:
    return str(uuid.uuid4())


def compacted(id: str | None = None) -> Conversation:
    """A real conversation with a compacted section (tool call, image), a tail and a rollup."""
    conversation = create_conversation(id=id or new_id(), summarize=join, keep=2)
    conversation.add(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "My name is Ada"},
            {
                "role": "assistant",
                "content": "",
                "calls": [
                    {"id": "c1", "name": "remember", "arguments": {"name": "Ada", "tags": ["x"]}}
                ],
            },
            {"role": "tool", "content": "ok", "tool_call_id": "c1"},
            {"role": "assistant", "content": "Noted", "images": ["aGk="]},
            {"role": "user", "content": "What is my name?"},
        ]
    )
    async_to_sync(conversation.compact)()
    assert conversation.sections and conversation.summary is not None and conversation.count
    return conversation


def chat(conversation: Conversation, turns: int, start: int = 0) -> None:
    """Append ``turns`` user/assistant exchanges."""
    for index in range(start, start + turns):
        conversation.add(
            [
                {"role": "user", "content": f"question {index}"},
                {"role": "assistant", "content": f"answer {index}"},
            ]
        )
