"""MCP servers' tools in a chat run: a real SDK server in a subprocess over Streamable HTTP.

The model is scripted (the only fake); the session is built from rows as every front door
builds it (``ChatSession.open``), so authority rules, read-only mode and approvals treat the
server's tools as they treat any other.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.mcp.catalog import catalog
from agents.models import AuthorityPolicy, AuthorityRule, McpServer
from agents.runtime.approvals import AWAITING_RESULT
from agents.runtime.mcp_tools import McpToolSource
from agents.runtime.session import ChatSession
from conversations.services import create_conversation
from orkestrel.core import Message
from orkestrel.core.dispatch import READ_ONLY_REFUSAL
from orkestrel.providers import ScriptedProvider
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


def _setup(url: str, *, rules=(), read_only=False, **server_fields):
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    profile = ensure_demo_profile()
    server = McpServer.objects.create(name="fixture", url=url, **server_fields)
    server.profiles.add(profile)
    if rules:
        policy = AuthorityPolicy.objects.create(name="rules", fallback_allowed=True)
        for position, (glob, verdict) in enumerate(rules, start=1):
            AuthorityRule.objects.create(
                policy=policy, position=position, tool_glob=glob, verdict=verdict
            )
        profile.authority_policy = policy
    profile.read_only = read_only
    profile.save()
    return user, create_conversation(user=user, profile=profile, title="t")


setup = sync_to_async(_setup)


async def run(user, conversation, *calls: tuple[str, dict]):
    """One run whose model calls ``calls`` (one turn each), then answers; its tool messages."""
    session = await ChatSession.open(str(conversation.id), user.id)
    turns = [
        {"tools": [{"id": f"c{i}", "name": n, "arguments": a}]} for i, (n, a) in enumerate(calls)
    ]
    session.agent.provider = ScriptedProvider(script=[*turns, "done"])
    session.agent.context.messages.add({"role": "user", "content": "go"})
    result = await session.agent.generate()
    tools = [m for m in session.agent.context.messages.messages() if m.role == "tool"]
    return session, result, tools


def value(message: Message):
    return json.loads(message.content)


def source_of(session: ChatSession) -> McpToolSource:
    (source,) = [s for s in session.sources.sources if isinstance(s, McpToolSource)]
    return source


async def test_the_servers_tools_reach_the_model_as_server__tool_and_run_on_the_server(mcp):
    user, conversation = await setup(mcp.url)
    session, result, (echo, forecast, pixel) = await run(
        user,
        conversation,
        ("fixture__echo", {"text": "hi"}),
        ("fixture__forecast", {"city": "Oslo"}),
        ("fixture__pixel", {}),
    )
    names = {definition.name for definition in session.agent.context.tools.definitions()}
    assert {"fixture__echo", "fixture__lookup", "fixture__grow", "workspace"} <= names
    assert result.stop == "done"
    assert value(echo) == {"result": "echo: hi"}
    # Structured content is the value the model reads; an image is shown to the user.
    assert value(forecast) == {"city": "Oslo", "celsius": 21.5}
    assert value(pixel) == "[image image/png shown to the user]"
    assert pixel.outcome.display["kind"] == "images"
    assert pixel.outcome.display["images"][0]["mime"] == "image/png"
    # The connection the calls used closes once the run settled (the agent's ``finish``).
    assert session.sources.closing is not None
    await session.sources.closing
    assert source_of(session).connection.open is False


async def test_a_tool_error_and_an_unknown_argument_come_back_as_errors_the_model_reads(mcp):
    user, conversation = await setup(mcp.url)
    _, result, (broken, bad) = await run(
        user, conversation, ("fixture__broken", {}), ("fixture__echo", {"words": 1})
    )
    assert broken.outcome.kind == "error" and "fixture/broken failed" in value(broken)
    assert bad.outcome.kind == "error" and "'text' is a required property" in value(bad)
    assert result.stop == "done"


async def test_authority_rules_name_mcp_tools_by_the_server_prefix(mcp):
    user, conversation = await setup(
        mcp.url,
        rules=[("fixture__delete_*", "deny"), ("fixture__lookup", "ask"), ("fixture__*", "allow")],
    )
    session, result, (deleted, echoed, looked) = await run(
        user,
        conversation,
        ("fixture__delete_item", {"key": "k"}),
        ("fixture__echo", {"text": "x"}),
        ("fixture__lookup", {"key": "k"}),
    )
    assert deleted.outcome.kind == "denied"
    assert value(echoed) == {"result": "echo: x"}
    # ``ask`` holds the call for a person: the server is not called, the run pauses.
    assert value(looked) == AWAITING_RESULT
    assert session.gate is not None
    assert [held.call.name for held in session.gate.held.values()] == ["fixture__lookup"]
    assert result.stop == "abort"


async def test_read_only_mode_runs_a_tool_the_server_marks_read_only_and_refuses_a_write(mcp):
    user, conversation = await setup(mcp.url, read_only=True)
    _, _, (lookup, delete) = await run(
        user,
        conversation,
        ("fixture__lookup", {"key": "k"}),
        ("fixture__delete_item", {"key": "k"}),
    )
    assert value(lookup) == {"result": "value of k"}
    assert (delete.outcome.kind, delete.outcome.reason) == ("denied", READ_ONLY_REFUSAL)


async def test_the_operator_overrides_a_tools_read_only_hint(mcp):
    user, conversation = await setup(
        mcp.url, read_only=True, safety={"lookup": False, "delete_item": True}
    )
    _, _, (lookup, delete) = await run(
        user,
        conversation,
        ("fixture__lookup", {"key": "k"}),
        ("fixture__delete_item", {"key": "k"}),
    )
    assert lookup.outcome.kind == "denied"
    assert value(delete) == {"result": "deleted k"}


async def test_the_allow_list_keeps_the_servers_other_tools_away(mcp):
    user, conversation = await setup(mcp.url, allowed_tools=["echo"])
    session = await ChatSession.open(str(conversation.id), user.id)
    names = {t.name for t in session.agent.context.tools.tools() if t.name.startswith("fixture")}
    await session.close()
    assert names == {"fixture__echo"}


async def test_a_server_that_goes_down_mid_run_fails_its_tools_and_the_run_ends_normally(mcp):
    user, conversation = await setup(mcp.url)
    _, result, (died, after) = await run(
        user, conversation, ("fixture__die", {}), ("fixture__echo", {"text": "x"})
    )
    assert died.outcome.kind == "error" and "MCP server 'fixture'" in value(died)
    assert after.outcome.kind == "error" and "MCP server 'fixture' is unreachable" in value(after)
    assert (result.stop, result.content) == ("done", "done")


async def test_a_server_down_at_the_start_still_shows_its_known_tools_which_fail_clearly(mcp):
    user, conversation = await setup(mcp.url)
    await run(user, conversation)  # lists the tools once
    catalog.evict(source_of(await ChatSession.open(str(conversation.id), user.id)).endpoint)
    mcp.stop()
    _, result, (echo,) = await run(user, conversation, ("fixture__echo", {"text": "x"}))
    assert "MCP server 'fixture' is unreachable" in value(echo)
    assert result.stop == "done"


async def test_a_change_the_server_announces_reaches_the_running_agent_and_the_cache(mcp):
    user, conversation = await setup(mcp.url)
    session = await ChatSession.open(str(conversation.id), user.id)
    assert session.agent.context.tools.tool("fixture__late") is None
    source = source_of(session)
    grown = await session.agent.context.tools.execute(
        {"id": "c1", "name": "fixture__grow", "arguments": {}}
    )
    assert grown.error is None
    await asyncio.wait_for(source.refreshed.wait(), timeout=10)
    late = await session.agent.context.tools.execute(
        {"id": "c2", "name": "fixture__late", "arguments": {}}
    )
    await session.close()
    assert late.value == {"result": "late answer"}
    assert "late" in {tool.name for tool in catalog.last_known(source.endpoint)}


async def test_a_bearer_token_from_its_variable_and_the_headers_reach_the_server(
    tmp_path, monkeypatch
):
    guarded = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_TOKEN": "sekrit"})
    try:
        user, conversation = await setup(
            guarded.url,
            auth="bearer_env",
            bearer_env="FIXTURE_MCP_TOKEN",
            headers={"X-Tenant": "acme"},
        )
        monkeypatch.setenv("FIXTURE_MCP_TOKEN", "sekrit")
        _, _, (echo,) = await run(user, conversation, ("fixture__echo", {"text": "x"}))
        server = (await ChatSession.open(str(conversation.id), user.id)).spec.mcp_servers[0]
        # Listed again at each start from here: the tools stay known, their calls fail.
        catalog.evict(server)
        monkeypatch.delenv("FIXTURE_MCP_TOKEN")
        _, _, (missing,) = await run(user, conversation, ("fixture__echo", {"text": "x"}))
        monkeypatch.setenv("FIXTURE_MCP_TOKEN", "wrong")
        _, _, (refused,) = await run(user, conversation, ("fixture__echo", {"text": "x"}))
        tenants = await asyncio.to_thread(guarded.seen_tenants)
    finally:
        guarded.stop()
    assert "FIXTURE_MCP_TOKEN is not set" in value(missing)
    assert "refused the credentials (HTTP 401)" in value(refused)
    assert value(echo) == {"result": "echo: x"}
    assert tenants and set(tenants) == {"acme"}


async def test_a_server_open_to_named_users_gives_its_tools_to_them_only(mcp):
    user, conversation = await setup(mcp.url)

    def restrict(*users):
        McpServer.objects.get(name="fixture").users.set(users)

    async def names() -> set[str]:
        session = await ChatSession.open(str(conversation.id), user.id)
        await session.close()
        return {t.name for t in session.agent.context.tools.tools() if t.name.startswith("fixture")}

    other = await sync_to_async(get_user_model().objects.create_user)("bob", password="pw-bob-1")
    await sync_to_async(restrict)(other)
    assert await names() == set()
    await sync_to_async(restrict)(other, user)
    assert "fixture__echo" in await names()
