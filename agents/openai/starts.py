"""Starting the run a request asks for, each refusal an OpenAI error.

A chat completion creates its conversation (``origin`` ``openai``) with the request's history
in the same transaction that opens the run: one database hop before the model is called.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from conversations.models import Conversation
from orkestrel.core import Message
from orkestrel.db import in_thread

from ..runs import TITLE_LENGTH, ConversationSeed, RunHandle, run_service
from ..runs.errors import (
    AwaitingApproval,
    Busy,
    ProfileForbidden,
    StartFailed,
    ToolClash,
    TooManyRuns,
    UnknownProfile,
    UnknownToolCall,
)
from ..runtime.overrides import RunOverrides
from ..runtime.spec import ModelUnavailable
from .access import Caller
from .approvals import conversation_waits
from .errors import OpenAIError, bad_request, model_forbidden, model_not_found

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
            seed=seed,
            overrides=overrides,
            results=results,
        )
    except UnknownProfile:
        raise model_not_found(model) from None
    except ProfileForbidden:
        raise model_forbidden(model) from None
    except ToolClash as error:
        raise bad_request(
            f"Tool names clash with the agent's own tools: {', '.join(error.names)}.",
            "tools",
            "tool_name_clash",
        ) from None
    except UnknownToolCall as error:
        raise bad_request(
            f"No tool call found for function call output with call_id {error.call_id}.",
            "input",
            "unknown_call_id",
        ) from None
    except AwaitingApproval:
        raise await in_thread(conversation_waits)(conversation_id) from None
    except Busy:
        raise OpenAIError(
            409,
            "The conversation of previous_response_id is still running; wait for its response.",
            param="previous_response_id",
            code="conversation_busy",
        ) from None
    except TooManyRuns as error:
        raise OpenAIError(
            429, str(error), type="rate_limit_error", code="too_many_runs", retry_after=1
        ) from None
    except ModelUnavailable as error:
        raise OpenAIError(409, str(error), param="previous_response_id", code=error.code) from None
    except StartFailed:
        raise OpenAIError(
            500,
            "The agent profile could not be started; an operator must check its configuration.",
            type="server_error",
            code="profile_unavailable",
        ) from None
