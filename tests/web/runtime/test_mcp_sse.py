"""The older HTTP+SSE transport: a server whose URL ends in ``/sse`` (the SDK's SSE app, in a
subprocess) is reached with the SDK's SSE client; its tools run in a run like any other, with
the bearer token from the server's variable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.mcp.catalog import catalog
from agents.mcp.check import check_endpoint
from agents.mcp.endpoint import McpEndpoint
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
    server = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_TOKEN": "sse-token"})
    try:
        yield server
    finally:
        server.stop()


async def test_a_server_over_http_and_sse_runs_its_tools_in_a_run(mcp, monkeypatch):
    monkeypatch.setenv("SSE_MCP_TOKEN", "sse-token")
    user, conversation = await setup(mcp.sse_url, auth="bearer_env", bearer_env="SSE_MCP_TOKEN")
    session, result, (echo, today) = await run(
        user,
        conversation,
        ("fixture__echo", {"text": "over sse"}),
        ("fixture__read_resource", {"uri": "notes://today"}),
    )
    assert value(echo) == {"result": "echo: over sse"}
    assert value(today) == "Buy milk; call Ada."
    assert result.stop == "done"


async def test_refused_credentials_over_sse_say_so(mcp, monkeypatch):
    monkeypatch.setenv("SSE_MCP_TOKEN", "wrong")
    endpoint = McpEndpoint(pk=None, name="fixture", url=mcp.sse_url, bearer_env="SSE_MCP_TOKEN")
    checked = await check_endpoint(endpoint)
    assert (checked.ok, checked.code) == (False, "mcp_refused")
