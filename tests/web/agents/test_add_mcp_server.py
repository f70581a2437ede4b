"""``manage.py add_mcp_server``: registers or updates a server only once it answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile, McpServer
from agents.sandbox import detect_sandbox
from tests.mcp_server import McpProcess, free_port
from tests.mcp_stdio_server import COMMAND as STDIO_COMMAND

pytestmark = pytest.mark.django_db


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[McpProcess]:
    server = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_TOKEN": "sekrit"})
    try:
        yield server
    finally:
        server.stop()


def add(*args: str) -> list[str]:
    out = StringIO()
    call_command("add_mcp_server", *args, stdout=out, stderr=StringIO())
    return out.getvalue().splitlines()


def test_it_registers_the_server_attaches_profiles_and_prints_its_tools(mcp, monkeypatch):
    monkeypatch.setenv("FIXTURE_MCP_TOKEN", "sekrit")
    demo = ensure_demo_profile()
    other = AgentProfile.objects.create(slug="other", name="other", model=demo.model)
    kept = McpServer.objects.create(name="fixture", url="http://127.0.0.1:1/mcp")
    kept.profiles.add(other)
    printed = add(
        "fixture",
        mcp.url,
        "--bearer-env",
        "FIXTURE_MCP_TOKEN",
        "--header",
        "X-Tenant=acme",
        "--profile",
        "demo",
    )
    server = McpServer.objects.get(name="fixture")
    assert "fixture__echo" in printed and "fixture__lookup" in printed
    assert len(printed) == len(server.offered) == 8
    assert (server.url, server.bearer_env, server.headers) == (
        mcp.url,
        "FIXTURE_MCP_TOKEN",
        {"X-Tenant": "acme"},
    )
    assert set(server.profiles.values_list("slug", flat=True)) == {"demo", "other"}
    assert mcp.seen_tenants() and set(mcp.seen_tenants()) == {"acme"}


def test_a_server_that_cannot_be_reached_registers_nothing():
    ensure_demo_profile()
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(CommandError, match="nothing registered: MCP server 'down' is unreachable"):
        add("down", url, "--profile", "demo")
    assert not McpServer.objects.exists()


def test_refused_credentials_change_nothing(mcp, monkeypatch):
    monkeypatch.setenv("FIXTURE_MCP_TOKEN", "wrong")
    demo = ensure_demo_profile()
    before = McpServer.objects.create(name="fixture", url="http://127.0.0.1:1/mcp")
    with pytest.raises(CommandError, match=r"refused the credentials \(HTTP 401\)"):
        add("fixture", mcp.url, "--bearer-env", "FIXTURE_MCP_TOKEN", "--profile", "demo")
    after = McpServer.objects.get(pk=before.pk)
    assert (after.url, after.bearer_env, after.offered) == (before.url, "", [])
    assert not after.profiles.filter(pk=demo.pk).exists()


def test_an_unknown_profile_or_a_bad_name_is_refused_before_any_connection():
    ensure_demo_profile()
    with pytest.raises(CommandError, match="no agent profile named 'nope'"):
        add("fixture", "http://127.0.0.1:1/mcp", "--profile", "nope")
    with pytest.raises(CommandError, match="name"):
        add("Bad Name", "http://127.0.0.1:1/mcp")
    assert not McpServer.objects.exists()


@pytest.mark.skipif(not detect_sandbox().available, reason="no bubblewrap sandbox here")
def test_a_stdio_server_from_the_command_line_is_checked_and_registered():
    demo = ensure_demo_profile()
    McpServer.objects.create(name="local", url="http://127.0.0.1:1/mcp", headers={"X-A": "b"})
    printed = add("local", "--command", json.dumps(STDIO_COMMAND), "--profile", "demo")
    server = McpServer.objects.get(name="local")
    assert printed == ["local__echo", "local__environment", "local__look", "local__exit"]
    assert (server.url, server.command, server.headers, server.network) == (
        "",
        STDIO_COMMAND,
        {},
        False,
    )
    assert server.profiles.filter(pk=demo.pk).exists()


def test_a_command_line_is_split_as_a_shell_would():
    with pytest.raises(CommandError, match="nothing registered|not valid|not found"):
        add("local", "--command", "no-such-mcp-program --flag 'two words'")
    assert not McpServer.objects.exists()


def test_a_url_and_a_command_together_are_refused():
    with pytest.raises(CommandError, match="URL or its --command"):
        add("local", "http://127.0.0.1:1/mcp", "--command", "true")
    with pytest.raises(CommandError, match="URL or its --command"):
        add("local")
    assert not McpServer.objects.exists()
