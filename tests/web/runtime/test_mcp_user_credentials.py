"""A server that takes each user's own token: a run sends its user's, and a user without one
sees the tools, whose calls tell the model where to add it (a real SDK server, a scripted
model)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.mcp.catalog import catalog
from agents.mcp.check import refresh_server
from agents.models import McpCredential, McpServer
from conversations.services import create_conversation
from tests.mcp_server import McpProcess
from tests.web.runtime.test_mcp_tools import run, value

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "alice-own-token-0123456789"


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[McpProcess]:
    server = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_TOKEN": TOKEN})
    try:
        yield server
    finally:
        server.stop()


@sync_to_async
def setup(url: str):
    """The per-user server on the demo profile; alice holds the token it takes, bob a wrong
    one, carol none. Each has a conversation; the operator refreshed the server's tools."""
    profile = ensure_demo_profile()
    server = McpServer.objects.create(name="fixture", url=url, auth="user_token")
    server.profiles.add(profile)
    users = {}
    for name, token in (("alice", TOKEN), ("bob", "bobs-wrong-token"), ("carol", None)):
        user = get_user_model().objects.create_user(name, password=f"pw-{name}-123")
        if token is not None:
            McpCredential.objects.store(user_id=user.pk, server_id=server.pk, token=token)
        users[name] = (user, create_conversation(user=user, profile=profile, title="t"))
    assert refresh_server(server, users["alice"][0].pk).ok
    catalog.clear()  # only the row's listing is known
    return users


async def test_each_run_sends_its_own_users_token(guarded):
    users = await setup(guarded.url)
    _, _, (alices,) = await run(*users["alice"], ("fixture__echo", {"text": "a"}))
    _, _, (bobs,) = await run(*users["bob"], ("fixture__echo", {"text": "b"}))
    assert value(alices) == {"result": "echo: a"}
    # Bob's listing failed with his token: he sees the tools the operator's refresh listed;
    # his call is refused by the server, not made with alice's token.
    assert bobs.outcome.kind == "error"
    assert "refused the credentials (HTTP 401)" in value(bobs)


async def test_a_user_without_a_credential_sees_the_tools_and_reads_where_to_add_it(guarded):
    users = await setup(guarded.url)
    session, result, (echo,) = await run(*users["carol"], ("fixture__echo", {"text": "c"}))
    assert echo.outcome.kind == "error"
    assert value(echo) == (
        "MCP server 'fixture' needs your credential: add it in Settings → MCP servers"
    )
    assert result.stop == "done"
    # Carol's run never opened a connection: nothing to send.
    assert all(not source.connection.open for source in session.sources.sources)


async def test_a_credential_entered_later_is_used_from_the_next_run(guarded):
    users = await setup(guarded.url)
    carol, conversation = users["carol"]
    _, _, (before,) = await run(carol, conversation, ("fixture__lookup", {"key": "k"}))
    await sync_to_async(McpCredential.objects.store)(
        user_id=carol.pk, server_id=await _server_id(), token=TOKEN
    )
    _, _, (after,) = await run(carol, conversation, ("fixture__lookup", {"key": "k"}))
    assert "needs your credential" in value(before)
    assert value(after) == {"result": "value of k"}


async def test_an_unreadable_credential_asks_for_it_again(guarded, monkeypatch):
    users = await setup(guarded.url)
    monkeypatch.setenv("ORKESTREL_CREDENTIALS_KEY", "a-key-that-sealed-nothing")
    _, _, (echo,) = await run(*users["alice"], ("fixture__echo", {"text": "a"}))
    assert value(echo) == (
        "MCP server 'fixture': your credential can no longer be read (the server's key "
        "changed): enter it again in Settings → MCP servers"
    )


async def test_no_token_reaches_a_log_or_a_repr(guarded, caplog):
    users = await setup(guarded.url)
    session, _, _ = await run(*users["alice"], ("fixture__echo", {"text": "a"}))
    await asyncio.sleep(0)
    (source,) = session.sources.sources
    assert TOKEN not in repr(source.endpoint)
    assert TOKEN not in caplog.text


@sync_to_async
def _server_id() -> int:
    return McpServer.objects.get(name="fixture").pk


async def test_without_a_credential_the_tools_another_users_token_listed_are_shown(guarded):
    users = await setup(guarded.url)
    await sync_to_async(McpServer.objects.filter(name="fixture").update)(offered=[])
    await run(*users["alice"])  # listed with alice's token
    _, _, (echo,) = await run(*users["carol"], ("fixture__echo", {"text": "c"}))
    assert "needs your credential" in value(echo)
