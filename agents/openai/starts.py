"""Starting the run a request asks for, each refusal an OpenAI error.

A chat completion creates its conversation (``origin`` ``openai``) with the request's history
in the same transaction that opens the run: one database hop before the model is called.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from conversations.models import Conversation
from orkestrel.core import Message
from orkestrel.core.documents import Document
from orkestrel.db import in_thread
from orkestrel.refusals import Refusal

from ..runs import TITLE_LENGTH, ConversationSeed, RunHandle, run_service
from ..runs.errors import AwaitingApproval
from ..runtime.overrides import RunOverrides
from .access import Caller
from .approvals import conversation_waits
from .errors import OpenAIError, refused
from .questions import conversation_asks

__all__ = ["start_run", "title_of"]


def title_of(messages: tuple[Message, ...], content: str | None) -> str:
    """A new conversation's title: its first user message, as the chat names one."""
    for message in messages:
        if message.role == "user" and message.content.strip():
            return " ".join(message.content.split())[:TITLE_LENGTH]
    return " ".join((content or "").split())[:TITLE_LENGTH]


async def start_run(
    caller: Caller,
    *,
    model: str,
    content: str | None,
    images: tuple[str, ...],
    overrides: RunOverrides,
    history: tuple[Message, ...] = (),
    conversation_id: str | None = None,
    results: Mapping[str, str] | None = None,
    documents: tuple[Document, ...] = (),
) -> RunHandle:
    """Start a run: in a new conversation seeded with ``history``, or (``conversation_id``)
    continuing a stored one."""
    seed = None
    if conversation_id is None:
        conversation_id = str(uuid.uuid4())
        seed = ConversationSeed(
            profile=model,
            origin=Conversation.Origin.OPENAI,
            history=history,
            title=title_of(history, content) if history else "",
        )
    try:
        return await run_service.start(
            user_id=caller.user_id,
            conversation_id=conversation_id,
            content=content,
            images=images,
            documents=documents,
            seed=seed,
            overrides=overrides,
            results=results,
        )
    except AwaitingApproval:
        raise await in_thread(_waits)(conversation_id) from None
    except Refusal as error:
        raise refused(error, model=model) from None


def _waits(conversation_id: str) -> OpenAIError:
    """The ``409`` of a conversation that waits: for the user's answers (``input_required``),
    else for approvals (``approval_required``)."""
    return conversation_asks(conversation_id) or conversation_waits(conversation_id)
