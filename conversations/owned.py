"""A user's conversation with its profile, read in one fixed statement.

Every run start and every API call on a conversation reads it first, on the thread that
shares the GIL with the event loop: as ``select_related("profile")`` the ORM compiled it anew
each time (about a millisecond); here it is written once (``orkestrel.statements``), with the
configuration revision riding along for the runtime's cache.
"""

from __future__ import annotations

import uuid

from django.db import connection

from agents.models import AgentProfile, config_revision_sql
from orkestrel.statements import Names, Query, prep

from .models import Conversation

__all__ = ["owned_conversation"]

_CONVERSATION_FIELDS = tuple(Conversation._meta.concrete_fields)
_PROFILE_FIELDS = tuple(AgentProfile._meta.concrete_fields)


def _sql(n: Names) -> str:
    c, p = "c", "p"
    columns = [n.field(f, c) for f in _CONVERSATION_FIELDS]
    columns += [n.field(f, p) for f in _PROFILE_FIELDS]
    return (
        f"SELECT {', '.join(columns)}, {config_revision_sql(n)} "
        f"FROM {n.table(Conversation)} {c} LEFT OUTER JOIN {n.table(AgentProfile)} {p} "
        f"ON {n.column(Conversation, 'profile', c)} = {n.column(AgentProfile, 'id', p)} "
        f"WHERE {n.column(Conversation, 'id', c)} = %s "
        f"AND {n.column(Conversation, 'owner', c)} = %s"
    )


_OWNED = Query(_sql, [*_CONVERSATION_FIELDS, *_PROFILE_FIELDS, None])


def owned_conversation(
    conversation_id: uuid.UUID | str, owner_id: int
) -> tuple[Conversation, int | None] | None:
    """The conversation ``conversation_id`` of ``owner_id``, its ``profile`` loaded, with the
    configuration revision; ``None`` when there is none (or the id is no UUID)."""
    try:
        key = uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    found = _OWNED.rows([prep(Conversation, "id", key), owner_id])
    if not found:
        return None
    row, split = found[0], len(_CONVERSATION_FIELDS)
    conversation = Conversation.from_db(
        connection.alias, [f.attname for f in _CONVERSATION_FIELDS], row[:split]
    )
    conversation.profile = (
        None
        if conversation.profile_id is None
        else AgentProfile.from_db(
            connection.alias, [f.attname for f in _PROFILE_FIELDS], row[split:-1]
        )
    )
    return conversation, row[-1]
