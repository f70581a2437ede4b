"""The stored responses of OpenAI's Responses API: which run and conversation an id names."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .models import Response, Run

__all__ = [
    "NotLatest",
    "StoredResponse",
    "continued_conversation",
    "delete_response",
    "owned_response",
    "record_response",
]


class NotLatest(ValueError):
    """A later response continued the same conversation already."""


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A response as ``GET /v1/responses/{id}`` needs it."""

    id: str
    run_id: int
    conversation_id: str
    model: str
    created: datetime
    echo: dict[str, Any]


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


def continued_conversation(user_id: int, response_id: str) -> str:
    """The conversation a ``previous_response_id`` continues.

    Raises:
        LookupError: no stored response of the user has that id.
        NotLatest: the conversation went on after that response (branching is not kept).
    """
    found = _stored(user_id, response_id)
    if found is None:
        raise LookupError(response_id)
    latest = (
        Run.objects.filter(conversation_id=found.conversation_id)
        .order_by("-created", "-id")
        .values_list("id", flat=True)
        .first()
    )
    if latest != found.run_id:
        raise NotLatest(response_id)
    return str(found.conversation_id)


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
