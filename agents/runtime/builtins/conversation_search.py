"""The ``conversation_search`` built-in: pull relevant history from the user's other chats.

The database finds candidate conversations (the requesting user's own, never the current
one) and ranks them by how many messages mention the query, then by recency. Each winner is
loaded as a kit ``Conversation`` through the store, cherry-picked with its ``search`` and
rendered with ``reference()``: the seed's cross-conversation provenance block, marked "NOT
part of this conversation", written into the active workspace as
``references/<conversation id>.md`` so the next turn reads it in the ``## Workspace`` section.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max, Q

from conversations.models import Conversation as ConversationRow
from conversations.models import Message as MessageRow
from conversations.stores import DjangoConversationStore
from orkestrel.core import ConversationSnapshot, Tool, create_conversation, create_tool
from orkestrel.db import in_thread

from ..registry import ToolContext

__all__ = [
    "DEFAULT_LIMIT",
    "DESCRIPTION",
    "MAX_LIMIT",
    "MESSAGES_PER_REFERENCE",
    "NAME",
    "PARAMETERS",
    "SAFE",
    "Candidate",
    "create_conversation_search_tool",
    "find_candidates",
    "reference_path",
    "search_conversations",
]

NAME = "conversation_search"
# It only reads the user's own data, but it writes a reference file into the active
# workspace: a side effect, so it is not safe.
SAFE = False
DEFAULT_LIMIT = 3
MAX_LIMIT = 10
MESSAGES_PER_REFERENCE = 5

DESCRIPTION = (
    "Search the user's other conversations for messages containing a query (case-insensitive). "
    "The best matching conversations are written as reference files under references/ in the "
    "workspace, each with the matching messages; the result lists them."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "pattern": r"\S",
            "description": "Text the messages must contain.",
        },
        "limit": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"How many conversations to return (default {DEFAULT_LIMIT}).",
        },
    },
    "required": ["query"],
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked conversation: its id, title, stored snapshot and database hit count."""

    id: str
    title: str
    hits: int
    snapshot: ConversationSnapshot


def reference_path(conversation_id: str) -> str:
    """Where the reference block for ``conversation_id`` is written in the workspace."""
    return f"references/{conversation_id}.md"


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return None


def find_candidates(user_id: int, current: str, query: str, limit: int) -> list[Candidate]:
    """The ``limit`` best conversations of ``user_id`` other than ``current`` (sync ORM)."""
    messages = MessageRow.objects.filter(
        Q(content__icontains=query) | Q(document_text__icontains=query),
        conversation__owner_id=user_id,
    )
    current_key = _uuid(current)
    if current_key is not None:
        messages = messages.exclude(conversation_id=current_key)
    ranked = list(
        messages.values("conversation_id")
        .annotate(hits=Count("pk"), updated=Max("conversation__updated"))
        .order_by("-hits", "-updated", "conversation_id")[:limit]
    )
    titles = dict(
        ConversationRow.objects.filter(
            pk__in=[row["conversation_id"] for row in ranked]
        ).values_list("pk", "title")
    )
    store = DjangoConversationStore(owner=user_id)
    found = []
    for row in ranked:
        key = str(row["conversation_id"])
        snapshot = store.get_sync(key)
        if snapshot is not None:
            found.append(
                Candidate(key, titles.get(row["conversation_id"]) or "", row["hits"], snapshot)
            )
    return found


async def search_conversations(
    context: ToolContext, query: str, limit: int = DEFAULT_LIMIT
) -> list[dict[str, Any]]:
    """Rank, cherry-pick and write references; returns ``[{conversation, title, matches, path}]``.

    Without an active workspace nothing is written: ``path`` is ``None`` and the entry carries
    the ``reference`` text instead.
    """
    candidates = await in_thread(find_candidates)(
        context.user_id, context.conversation_id, query, limit
    )
    workspace = context.agent_context.workspaces.active
    results: list[dict[str, Any]] = []
    for candidate in candidates:
        conversation = create_conversation(snapshot=candidate.snapshot)
        hits = conversation.search(query)
        if not hits:
            # The database's case folding can be broader than Python's: nothing to cite.
            continue
        text = conversation.reference(
            label=candidate.title or candidate.id, messages=hits[:MESSAGES_PER_REFERENCE]
        )
        entry: dict[str, Any] = {
            "conversation": candidate.id,
            "title": candidate.title,
            "matches": len(hits),
            "path": None,
        }
        if workspace is None:
            entry["reference"] = text
        else:
            entry["path"] = reference_path(candidate.id)
            workspace.write(entry["path"], text)
        results.append(entry)
    return results


def create_conversation_search_tool(context: ToolContext) -> Tool:
    """The ``conversation_search`` tool bound to this run's user and conversation."""

    async def execute(arguments: Mapping[str, Any]) -> Any:
        limit = arguments.get("limit") or DEFAULT_LIMIT
        return await search_conversations(context, arguments["query"], limit)

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
