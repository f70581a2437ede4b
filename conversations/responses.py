"""The stored responses of OpenAI's Responses API: which run and conversation an id names, and
where a ``previous_response_id`` goes on (in place, or in a branch cut after that response)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from workspaces.models import Workspace

from .forks import fork_conversation
from .models import Conversation, Message, Response, Run

__all__ = [
    "Continuation",
    "StoredResponse",
    "continued_conversation",
    "delete_response",
    "discard_branch",
    "owned_response",
    "record_response",
]


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A response as ``GET /v1/responses/{id}`` needs it."""

    id: str
    run_id: int
    conversation_id: str
    model: str
    created: datetime
    echo: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Continuation:
    """Where a ``previous_response_id`` goes on: its own conversation, or (``branched``) a
    fork of it made for this request."""

    conversation_id: str
    branched: bool


def _stored(user_id: int, response_id: str) -> Response | None:
    return (
        Response.objects.filter(id=response_id, owner_id=user_id, stored=True)
        .only("id", "run_id", "conversation_id", "model", "created", "echo")
        .first()
    )


def owned_response(user_id: int, response_id: str) -> StoredResponse | None:
    """The user's stored response ``response_id`` (``None``: absent, unstored, deleted or
    someone else's)."""
    found = _stored(user_id, response_id)
    if found is None:
        return None
    return StoredResponse(
        found.id, found.run_id, str(found.conversation_id), found.model, found.created, found.echo
    )


def continued_conversation(user_id: int, response_id: str, pending: str) -> Continuation:
    """The conversation a ``previous_response_id`` continues.

    The latest response of a conversation continues it in place. An earlier one branches, as
    OpenAI's API allows: a fork (``forks.fork_conversation``) through the last message stored
    before the conversation's next run opened, so that response's input and output and what
    came before them, not what came after. Client calls that response ended on wait for
    results again (``pending``, their placeholder), though a later response answered them.

    Raises:
        LookupError: no stored response of the user has that id.
        ForkBusy: a later run of the conversation is still going.
    """
    found = _stored(user_id, response_id)
    if found is None:
        raise LookupError(response_id)
    conversation_id = str(found.conversation_id)
    # One run at a time per conversation: a later run has a greater id.
    following = (
        Run.objects.filter(conversation_id=conversation_id, id__gt=found.run_id)
        .order_by("id")
        .values_list("created", flat=True)
        .first()
    )
    if following is None:
        return Continuation(conversation_id, branched=False)
    # The next run stores its messages after its row: every earlier message is older than it.
    through = (
        Message.objects.filter(conversation_id=conversation_id, created__lt=following)
        .order_by("-position")
        .values_list("message_id", flat=True)
        .first()
    )
    if through is None:
        raise LookupError(response_id)  # a response with no history before it: nothing to keep
    owner = get_user_model().objects.get(pk=user_id)
    with transaction.atomic():
        branch = fork_conversation(user=owner, conversation_id=conversation_id, message_id=through)
        _reopen_calls(str(branch.pk), found.run_id, pending)
    return Continuation(str(branch.pk), branched=True)


def _reopen_calls(conversation_id: str, run_id: int, pending: str) -> None:
    """Put back the placeholders that run ``run_id`` committed (its client calls), which a
    later request filled in and the fork copied."""
    frames = Run.objects.filter(id=run_id).values_list("events", flat=True).first() or []
    waiting = [
        message["id"]
        for frame in frames
        if frame.get("type") == "committed"
        for message in frame.get("messages", ())
        if message.get("role") == "tool" and message.get("content") == pending
    ]
    if waiting:
        Message.objects.filter(conversation_id=conversation_id, message_id__in=waiting).update(
            content=pending
        )


def discard_branch(conversation_id: str) -> None:
    """Remove a branch that no run started in (its request was refused), with its workspace."""
    with transaction.atomic():
        unused = list(
            Conversation.objects.filter(pk=conversation_id, runs__isnull=True).values_list(
                "workspace_id", flat=True
            )
        )
        if unused:
            Conversation.objects.filter(pk=conversation_id).delete()
            Workspace.objects.filter(pk=unused[0]).delete()


def record_response(
    response_id: str,
    user_id: int,
    conversation_id: str,
    run_id: int,
    model: str,
    stored: bool,
    echo: dict[str, Any],
) -> None:
    Response.objects.create(
        id=response_id,
        owner_id=user_id,
        conversation_id=conversation_id,
        run_id=run_id,
        model=model,
        stored=stored,
        echo=echo,
    )


def delete_response(user_id: int, response_id: str) -> bool:
    """Forget a stored response (its run and conversation stay); whether there was one."""
    deleted, _ = Response.objects.filter(id=response_id, owner_id=user_id, stored=True).delete()
    return bool(deleted)
