"""``GET /api/conversations/{id}/tools/``: the effective tool catalogue of a conversation, its
MCP servers' tools included, each saying whether it runs in read-only mode (``safe``) and
whether an ``ask`` rule can hold it (``asks``); another user's conversation is a 404."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.mcp.catalog import catalog
from agents.models import AuthorityPolicy, AuthorityRule, McpServer, Scope, Tool
from conversations.models import Conversation
from tests.mcp_server import McpProcess

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[McpProcess]:
    server = McpProcess.start(tmp_path / "mcp.log")
    try:
        yield server
    finally:
        server.stop()


def careful() -> AuthorityPolicy:
    """Workspace writes and the server's lookups ask a person; a blanket allow on the server's
    echo comes first, so no later rule can hold it."""
    policy = AuthorityPolicy.objects.create(name="careful", fallback_allowed=True)
    rules = [
        ("workspace", {"operation": {"in": ["write", "remove"]}}, "ask"),
        ("fixture__echo", {}, "allow"),
        ("fixture__*", {}, "ask"),
    ]
    for position, (glob, conditions, verdict) in enumerate(rules, start=1):
        AuthorityRule.objects.create(
            policy=policy, position=position, tool_glob=glob, conditions=conditions, verdict=verdict
        )
    return policy


def by_name(body: dict) -> dict[str, dict]:
    return {tool["name"]: tool for tool in body["tools"]}


def test_the_catalogue_lists_the_profiles_tools_and_the_mcp_servers_with_safe_and_asks(
    api, alice, editor, mcp
):
    profile = editor(authority_policy=careful())
    server = McpServer.objects.create(name="fixture", url=mcp.url)
    server.profiles.add(profile)
    chat = Conversation.objects.create(owner=alice, title="Tools", profile=profile)

    response = api.get(f"/api/conversations/{chat.pk}/tools/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["read_only"] is False
    tools = by_name(body)
    assert {"workspace", "fixture__echo", "fixture__lookup", "fixture__delete_item"} <= set(tools)
    assert tools["workspace"] == {
        "name": "workspace",
        "description": tools["workspace"]["description"],
        "safe": False,
        "read_only": "some",
        "asks": True,
        "source": "builtin",
    }
    assert "list_workspaces" in tools["workspace"]["description"]
    assert tools["fixture__lookup"]["source"] == "mcp"
    assert tools["fixture__lookup"]["safe"] is True and tools["fixture__lookup"]["asks"] is True
    assert tools["fixture__lookup"]["description"] == "Look an item up (changes nothing)."
    assert tools["fixture__echo"]["asks"] is False
    assert tools["fixture__delete_item"]["safe"] is False
    assert tools["fixture__delete_item"]["read_only"] == "none"


def test_only_enabled_tools_inside_the_profiles_scope_are_listed(api, alice, editor):
    scope = Scope.objects.create(name="narrow", tools=["workspace", "grep"])
    profile = editor(scope=scope, read_only=True)
    grep = Tool.objects.create(
        name="grep", kind=Tool.Kind.COMMAND, program="grep", safe=True, description="Find text."
    )
    off = Tool.objects.create(name="off", kind=Tool.Kind.COMMAND, program="true", enabled=False)
    outside = Tool.objects.create(name="http_fetch", kind=Tool.Kind.BUILTIN)
    profile.tools.add(grep, off, outside)
    chat = Conversation.objects.create(owner=alice, title="Scoped", profile=profile)

    body = api.get(f"/api/conversations/{chat.pk}/tools/").json()

    # In the order the model is offered them: the profile's rows, by name.
    assert [tool["name"] for tool in body["tools"]] == ["grep", "workspace"]
    assert body["read_only"] is True
    grep_entry = by_name(body)["grep"]
    assert grep_entry["safe"] is True and grep_entry["source"] == "command"
    assert grep_entry["description"] == "Find text." and grep_entry["asks"] is False


def test_another_users_conversation_is_not_found(api, bob, editor):
    theirs = Conversation.objects.create(owner=bob, title="Bob's", profile=editor())
    response = api.get(f"/api/conversations/{theirs.pk}/tools/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_the_operation_is_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = schema["paths"]["/api/conversations/{conversation_id}/tools/"]["get"]
    assert operation["operationId"] == "listTools"
    assert {"200", "404"} <= set(operation["responses"])
