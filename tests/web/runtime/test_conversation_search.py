"""``conversation_search``: the user's own other conversations, ranked, cited into the workspace."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections
from django.utils import timezone

from agents.runtime.arguments import guard_tool
from agents.runtime.builtins.conversation_search import (
    MESSAGES_PER_REFERENCE,
    create_conversation_search_tool,
)
from conversations.models import Conversation as ConversationRow
from conversations.stores import DjangoConversationStore
from orkestrel.core import ToolManager, create_conversation

from .helpers import call, tool_context

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timezone.now()


def message(role: str, content: str) -> dict:
    return {"id": str(uuid.uuid4()), "role": role, "content": content}


def store_conversation(
    user,
    title: str,
    messages: list[dict],
    *,
    age_hours: int = 0,
    section: dict | None = None,
    summary: str | None = None,
) -> str:
    """Save a conversation through the store, then set its title and recency."""
    id = str(uuid.uuid4())
    snapshot = {"id": id, "sections": [section] if section else [], "messages": messages}
    if summary is not None:
        snapshot["summary"] = summary
    DjangoConversationStore(owner=user).set_sync(snapshot)
    ConversationRow.objects.filter(pk=id).update(
        title=title, updated=NOW - dt.timedelta(hours=age_hours)
    )
    return id


def world() -> dict[str, object]:
    users = get_user_model().objects
    ada = users.create_user("ada")
    bob = users.create_user("bob")
    ids = {
        "ada": ada.pk,
        "bob": bob.pk,
        # Two hits, one of them folded into a section with a rollup summary.
        "trip": store_conversation(
            ada,
            "Trip planning",
            [message("user", "Book the LISBON hotel"), message("assistant", "Booked.")],
            age_hours=5,
            section={
                "id": "s1",
                "summary": "Chose a city.",
                "messages": [message("user", "Lisbon or Porto?"), message("assistant", "Lisbon.")],
            },
            summary="Planning a trip to Portugal.",
        ),
        # One hit, recent; untitled.
        "recent": store_conversation(
            ada,
            "",
            [message("user", "flights to lisbon?"), message("assistant", "Two a day.")],
            age_hours=1,
        ),
        # One hit, older than "recent".
        "older": store_conversation(
            ada, "Old chat", [message("user", "Lisbon weather")], age_hours=48
        ),
        "unrelated": store_conversation(ada, "Cooking", [message("user", "Pasta recipes")]),
        # The current conversation mentions it most of all, and must never be cited.
        "current": store_conversation(
            ada,
            "Now",
            [message("user", "lisbon lisbon")] * 1
            + [message("assistant", "Lisbon again"), message("user", "Lisbon!")],
        ),
        # Another user's conversation: never visible to ada.
        "bobs": store_conversation(
            bob, "Bob in Lisbon", [message("user", "Lisbon " + str(n)) for n in range(6)]
        ),
    }
    return ids


@pytest.fixture
async def data():
    yield await sync_to_async(world)()
    # The ORM ran in asgiref's worker thread: close its connection, or PostgreSQL refuses to
    # drop the test database while it is still open.
    await sync_to_async(connections.close_all)()


def searcher(user_id: int, current: str, *, workspace: bool = True):
    context = tool_context(user_id=user_id, conversation_id=current)
    if workspace:
        context.agent_context.workspaces.add(id="w")
    return context, ToolManager(guard_tool(create_conversation_search_tool(context), timeout=10))


async def expected_reference(id: str, label: str, query: str) -> str:
    snapshot = await DjangoConversationStore().get(id)
    conversation = create_conversation(snapshot=snapshot)
    return conversation.reference(
        label=label, messages=conversation.search(query)[:MESSAGES_PER_REFERENCE]
    )


async def test_results_rank_by_hits_then_recency_and_skip_current_and_others(data):
    context, manager = searcher(data["ada"], data["current"])
    result = await call(manager, "conversation_search", query="lisbon", limit=10)
    assert result.error is None
    assert [
        (entry["conversation"], entry["title"], entry["matches"]) for entry in result.value
    ] == [
        (data["trip"], "Trip planning", 3),
        (data["recent"], "", 1),
        (data["older"], "Old chat", 1),
    ]
    cited = {entry["conversation"] for entry in result.value}
    assert data["current"] not in cited and data["bobs"] not in cited


async def test_each_reference_file_is_exactly_the_kits_reference(data):
    context, manager = searcher(data["ada"], data["current"])
    result = await call(manager, "conversation_search", query="Lisbon")
    workspace = context.agent_context.workspaces.active
    for entry in result.value:
        assert entry["path"] == f"references/{entry['conversation']}.md"
        label = entry["title"] or entry["conversation"]
        assert workspace.read(entry["path"]) == await expected_reference(
            entry["conversation"], label, "Lisbon"
        )
    trip = workspace.read(f"references/{data['trip']}.md")
    assert trip.splitlines() == [
        '[Reference — conversation "Trip planning" — NOT part of this conversation]',
        "Summary: Planning a trip to Portugal.",
        "Relevant messages:",
        "- user: Lisbon or Porto?",
        "- assistant: Lisbon.",
        "- user: Book the LISBON hotel",
    ]
    assert sorted(file.path for file in workspace.files()) == sorted(
        entry["path"] for entry in result.value
    )


async def test_the_default_limit_is_three_and_a_limit_narrows(data):
    context, manager = searcher(data["ada"], data["current"])
    assert len((await call(manager, "conversation_search", query="lisbon")).value) == 3
    one = (await call(manager, "conversation_search", query="lisbon", limit=1)).value
    assert [entry["conversation"] for entry in one] == [data["trip"]]


async def test_a_reference_cites_at_most_five_messages(data):
    context, manager = searcher(data["bob"], str(uuid.uuid4()))
    (entry,) = (await call(manager, "conversation_search", query="lisbon")).value
    assert (entry["conversation"], entry["matches"]) == (data["bobs"], 6)
    text = context.agent_context.workspaces.active.read(entry["path"])
    assert text.count("\n- user: Lisbon ") == MESSAGES_PER_REFERENCE


async def test_the_current_conversation_is_excluded_even_when_it_is_the_only_hit(data):
    context, manager = searcher(data["ada"], data["unrelated"])
    result = await call(manager, "conversation_search", query="pasta")
    assert result.value == []
    assert context.agent_context.workspaces.active.count == 0


async def test_another_users_conversations_are_never_searched(data):
    context, manager = searcher(data["bob"], data["bobs"])
    assert (await call(manager, "conversation_search", query="lisbon")).value == []


async def test_without_a_workspace_the_reference_text_is_returned_instead(data):
    context, manager = searcher(data["ada"], data["current"], workspace=False)
    result = await call(manager, "conversation_search", query="weather")
    assert result.value == [
        {
            "conversation": data["older"],
            "title": "Old chat",
            "matches": 1,
            "path": None,
            "reference": await expected_reference(data["older"], "Old chat", "weather"),
        }
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "invalid arguments: 'query' is a required property"),
        ({"query": ""}, "invalid arguments at $.query: '' should be non-empty"),
        ({"query": "   "}, "invalid arguments at $.query: '   ' does not match"),
        ({"query": "x", "limit": 11}, "invalid arguments at $.limit: 11 is greater than"),
        ({"query": "x", "limit": 0}, "invalid arguments at $.limit: 0 is less than"),
    ],
)
async def test_bad_arguments_are_refused(data, arguments, message):
    context, manager = searcher(data["ada"], data["current"])
    result = await call(manager, "conversation_search", **arguments)
    assert result.error.startswith(message)


async def test_like_wildcards_in_the_query_are_literal(data):
    context, manager = searcher(data["ada"], data["current"])
    assert (await call(manager, "conversation_search", query="%")).value == []
    assert (await call(manager, "conversation_search", query="_")).value == []
