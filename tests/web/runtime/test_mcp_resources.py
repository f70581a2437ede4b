"""An MCP server's resources and prompts, from a real SDK server in a subprocess: the model
lists and reads resources through ``<server>__read_resource`` (a safe tool: read-only mode runs
it); prompts and resources are listed and fetched as the chat's slash menu and attachments do."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.mcp.catalog import catalog
from agents.mcp.connection import McpConnection
from agents.mcp.endpoint import McpEndpoint
from agents.mcp.errors import McpError
from agents.mcp.prompts import PromptText, get_prompt, list_prompts
from agents.mcp.resources import list_resources, read_resource
from tests.mcp_server import McpProcess
from tests.web.runtime.test_mcp_tools import run, setup, value

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


async def test_the_model_lists_and_reads_resources_even_in_read_only_mode(mcp):
    user, conversation = await setup(mcp.url, read_only=True)
    session, result, (listed, today, logo) = await run(
        user,
        conversation,
        ("fixture__read_resource", {}),
        ("fixture__read_resource", {"uri": "notes://today"}),
        ("fixture__read_resource", {"uri": "notes://logo"}),
    )
    assert session.agent.context.tools.tool("fixture__read_resource").safe is True
    assert listed.outcome.kind != "error", value(listed)
    uris = {item["uri"] for item in value(listed)}
    assert uris == {"notes://today", "notes://logo"}
    assert value(today) == "Buy milk; call Ada."
    assert "[binary image/png" in str(value(logo))
    assert result.stop == "done"


async def test_an_unknown_resource_is_an_error_the_model_reads(mcp):
    user, conversation = await setup(mcp.url)
    _, result, (missing,) = await run(
        user, conversation, ("fixture__read_resource", {"uri": "notes://nowhere"})
    )
    assert missing.outcome.kind == "error"
    assert "fixture" in str(value(missing))
    assert result.stop == "done"


async def test_an_allow_list_without_read_resource_leaves_the_tool_out(mcp):
    user, conversation = await setup(mcp.url, allowed_tools=["echo"])
    session, _, _ = await run(user, conversation)
    names = {definition.name for definition in session.agent.context.tools.definitions()}
    assert "fixture__echo" in names and "fixture__read_resource" not in names


async def test_prompts_are_listed_with_their_arguments_and_got_as_text(mcp):
    connection = McpConnection(McpEndpoint(pk=1, name="fixture", url=mcp.url))
    try:
        (review,) = await list_prompts(connection)
        texts = await get_prompt(connection, "review", {"code": "x = 1"})
        with pytest.raises(McpError, match="fixture"):
            await get_prompt(connection, "review", {})
        resources = await list_resources(connection)
        (today,) = await read_resource(connection, "notes://today")
    finally:
        await connection.close()
    assert (review.command, review.description) == ("fixture__review", review.description)
    assert [(a.name, a.required) for a in review.arguments] == [("code", True), ("focus", False)]
    assert texts == (
        PromptText("user", "Review this code for bugs:\nx = 1"),
        PromptText("assistant", "I will read it closely."),
    )
    assert {r.name for r in resources} == {"today", "logo"}
    assert (today.uri, today.mime, today.text) == (
        "notes://today",
        "text/plain",
        "Buy milk; call Ada.",
    )
