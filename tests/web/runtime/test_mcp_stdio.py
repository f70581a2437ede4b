"""A stdio MCP server: started by the SDK's stdio client under the command tools' sandbox,
with nothing of the server's environment, its tools in a run like a URL server's."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.mcp.catalog import catalog
from agents.mcp.check import check_endpoint
from agents.mcp.endpoint import McpEndpoint, endpoint_of
from agents.mcp.errors import McpUnreachable
from agents.mcp.stdio import StdioProcess
from agents.models import McpServer
from agents.sandbox import Sandbox, detect_sandbox
from conversations.services import create_conversation
from tests.mcp_stdio_server import COMMAND
from tests.web.runtime.test_mcp_tools import run, value

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not detect_sandbox().available, reason="no bubblewrap sandbox here"),
]


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


@sync_to_async
def setup(**fields):
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    profile = ensure_demo_profile()
    server = McpServer.objects.create(name="local", command=COMMAND, **fields)
    server.profiles.add(profile)
    return user, create_conversation(user=user, profile=profile, title="t")


async def test_a_stdio_servers_tools_run_in_a_run_and_its_hints_hold(monkeypatch):
    user, conversation = await setup()
    session, result, (echo,) = await run(user, conversation, ("local__echo", {"text": "hi"}))
    assert value(echo) == "echo: hi"
    assert session.agent.context.tools.tool("local__echo").safe is True
    assert session.agent.context.tools.tool("local__environment").safe is False
    assert result.stop == "done"


async def test_it_gets_no_inherited_environment_only_its_token_variable(monkeypatch):
    monkeypatch.setenv("LOCAL_MCP_TOKEN", "the-token")
    monkeypatch.setenv("USER", "server-user")
    user, conversation = await setup(auth="bearer_env", bearer_env="LOCAL_MCP_TOKEN")
    _, _, (environment,) = await run(user, conversation, ("local__environment", {}))
    seen = value(environment)
    assert set(seen) <= {"PATH", "HOME", "LANG", "LOCAL_MCP_TOKEN", "PWD"}
    assert seen["LOCAL_MCP_TOKEN"] == "the-token"
    assert "SECRET_KEY" not in seen and "USER" not in seen


async def test_it_runs_in_the_sandbox_its_own_home_the_project_hidden():
    user, conversation = await setup()
    manage = str(settings.BASE_DIR / "manage.py")
    _, _, (project, environment) = await run(
        user, conversation, ("local__look", {"path": manage}), ("local__environment", {})
    )
    assert value(project)["exists"] is False
    assert value(project)["cwd"] == value(environment)["HOME"]


async def test_a_process_that_stops_mid_call_fails_with_its_last_words_and_starts_again():
    user, conversation = await setup()
    _, result, (stopped, again) = await run(
        user, conversation, ("local__exit", {}), ("local__echo", {"text": "back"})
    )
    assert stopped.outcome.kind == "error"
    assert "MCP server 'local' (stdio) stopped" in value(stopped)
    assert "it wrote: the fixture was told to exit" in value(stopped)
    assert value(again) == "echo: back"
    assert result.stop == "done"


async def test_without_a_sandbox_a_stdio_server_does_not_start():
    endpoint = McpEndpoint(pk=None, name="local", url="", command=tuple(COMMAND))
    process = StdioProcess(endpoint, Sandbox(False, "bubblewrap is not installed"))
    with pytest.raises(McpUnreachable) as error:
        async with process.transport():
            pass
    assert str(error.value) == (
        "MCP server 'local' runs only under an OS sandbox, and this server has none: "
        "bubblewrap is not installed"
    )


async def test_a_check_lists_a_stdio_servers_tools():
    await setup()
    row = await sync_to_async(McpServer.objects.get)(name="local")
    result = await check_endpoint(endpoint_of(row, related=False))
    assert result.ok, result.detail
    assert [tool.name for tool in result.tools] == ["echo", "environment", "look", "exit"]


def test_a_server_has_a_url_or_a_command_and_a_stdio_one_takes_no_user_tokens():
    def problems(**fields) -> dict:
        try:
            McpServer(name="s", **fields).full_clean()
        except ValidationError as error:
            return error.message_dict
        return {}

    assert problems(command=COMMAND) == {}
    assert "command" in problems(url="https://x.example.com/mcp", command=COMMAND)
    assert "url" in problems()
    assert "auth" in problems(command=COMMAND, auth="user_token")
    assert "headers" in problems(command=COMMAND, headers={"X-A": "b"})
    assert "command" in problems(command=["no-such-program-here"])
    assert "url" in problems(command=[])
    assert "command" in problems(command="python3 -c pass")


def test_the_database_refuses_both_a_url_and_a_command():
    from django.db import IntegrityError

    with pytest.raises(IntegrityError):
        McpServer.objects.create(name="s", url="https://x.example.com/mcp", command=COMMAND)


def test_the_fixture_command_is_json():
    assert json.loads(json.dumps(COMMAND)) == COMMAND
