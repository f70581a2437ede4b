"""``/api/conversations/{id}/mcp/``: the prompts and resources of the conversation's MCP
servers, from a real SDK server in a subprocess; another user's conversation, and a server the
profile does not use, are 404s; a server that is down is named, not fatal."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.mcp.catalog import catalog
from agents.models import AgentProfile, McpServer
from conversations.services import create_conversation
from tests.mcp_server import McpProcess, free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    server = McpProcess.start(tmp_path_factory.mktemp("mcp") / "mcp.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def base(alice, mcp) -> str:
    profile = ensure_demo_profile()
    McpServer.objects.create(name="fixture", url=mcp.url).profiles.add(profile)
    McpServer.objects.create(name="elsewhere", url=mcp.url)
    conversation = create_conversation(user=alice, profile=profile, title="t")
    return f"/api/conversations/{conversation.id}/mcp/"


def test_the_prompts_are_listed_with_their_arguments(api, base):
    body = api.get(f"{base}prompts/").json()
    assert body["unavailable"] == []
    (review,) = body["prompts"]
    assert (review["command"], review["server"], review["name"]) == (
        "fixture__review",
        "fixture",
        "review",
    )
    assert [a["name"] for a in review["arguments"] if a["required"]] == ["code"]


def test_getting_a_prompt_answers_its_messages_and_a_missing_argument_is_a_502(api, base):
    got = api.post(
        f"{base}prompts/",
        {"server": "fixture", "prompt": "review", "arguments": {"code": "x = 1", "focus": "style"}},
        format="json",
    )
    assert got.status_code == 200, got.json()
    assert got.json()["messages"] == [
        {"role": "user", "text": "Review this code for style:\nx = 1"},
        {"role": "assistant", "text": "I will read it closely."},
    ]
    refused = api.post(f"{base}prompts/", {"server": "fixture", "prompt": "review"}, format="json")
    assert refused.status_code == 502 and refused.json()["code"].startswith("mcp_")


def test_resources_are_listed_and_read_as_text(api, base):
    listed = api.get(f"{base}resources/").json()
    assert {r["uri"] for r in listed["resources"]} == {"notes://today", "notes://logo"}
    read = api.get(f"{base}resource/", {"server": "fixture", "uri": "notes://today"})
    assert read.status_code == 200
    assert read.json()["contents"] == [
        {"uri": "notes://today", "mime": "text/plain", "text": "Buy milk; call Ada."}
    ]
    assert api.get(f"{base}resource/", {"server": "fixture"}).status_code == 400


def test_a_server_the_profile_does_not_use_or_another_users_conversation_is_a_404(
    api, base, bob, issue_key, key_client
):
    other = api.get(f"{base}resource/", {"server": "elsewhere", "uri": "notes://today"})
    assert other.status_code == 404
    bobs = key_client(issue_key(bob, scopes=("read", "run")))
    assert bobs.get(f"{base}prompts/").status_code == 404
    assert bobs.get(f"{base}resources/").status_code == 404


def test_a_server_that_is_down_is_named_and_the_others_still_listed(api, base):
    down = McpServer.objects.create(name="down", url=f"http://127.0.0.1:{free_port()}/mcp")
    down.profiles.add(AgentProfile.objects.get(slug="demo"))
    body = api.get(f"{base}prompts/").json()
    assert [p["command"] for p in body["prompts"]] == ["fixture__review"]
    (unavailable,) = body["unavailable"]
    assert (unavailable["server"], unavailable["code"]) == ("down", "mcp_unreachable")
