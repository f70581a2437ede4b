"""``/mcp`` on the real server (Daphne, which sends no lifespan): the official MCP SDK's client
of the current revision and of the previous one lists the agents, calls one, goes on with the
conversation, and answers a held call by elicitation on the same live connection."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult

from .conftest import Server
from .openai_setup import TIMEOUT, shell_json

pytestmark = pytest.mark.e2e

# Keys for alice and bob, and ``careful``: the offline demo model with the workspace tool,
# every workspace call asking its user first.
SETUP_CODE = """
from django.contrib.auth import get_user_model
from agents.models import AgentProfile, ApiKey, AuthorityPolicy, AuthorityRule, Tool
users = get_user_model().objects
keys = {
    name: ApiKey.objects.issue(user=users.get(username=name), name="mcp e2e")[1]
    for name in ("alice", "bob")
}
policy = AuthorityPolicy.objects.create(name="mcp e2e: ask first")
AuthorityRule.objects.create(
    policy=policy, position=1, tool_glob="workspace", zone="files", verdict="ask"
)
profile = AgentProfile.objects.create(
    slug="careful", name="Careful", model="demo/echo", authority_policy=policy
)
profile.tools.set(Tool.objects.filter(name="workspace"))
print(json.dumps(keys))
"""
FILES = "what files are in my workspace?"


@pytest.fixture(scope="module")
def mcp_keys(server: Server) -> dict[str, str]:
    return shell_json(server, SETUP_CODE)


def run(work: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``work`` on an event loop of its own thread (Playwright's sync API may hold this
    thread's)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(work(), TIMEOUT * 2)).result()


def client(server: Server, key: str, mode: str = "auto", elicitation: Any = None) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT)
    transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
    return Client(transport, mode=mode, elicitation_callback=elicitation)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_lists_calls_and_goes_on_with_a_conversation(
    server: Server, mcp_keys: dict[str, str], mode: str
) -> None:
    async def work() -> tuple[str, list[str], CallToolResult, CallToolResult]:
        async with client(server, mcp_keys["alice"], mode) as mcp:
            tools = [tool.name for tool in (await mcp.list_tools()).tools]
            first = await mcp.call_tool("demo", {"message": "hello from mcp"})
            conversation = first.structured_content["conversation"]
            second = await mcp.call_tool(
                "demo", {"message": "and again", "conversation": conversation}
            )
            return mcp.protocol_version, tools, first, second

    version, tools, first, second = run(work)
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert set(tools) >= {"demo", "careful"}
    assert not first.is_error and first.content[0].text.startswith("You said: hello from mcp")
    assert second.content[0].text.startswith("You said: and again")
    assert second.structured_content["conversation"] == first.structured_content["conversation"]
    assert second.structured_content["usage"]["total"] > 0


@pytest.mark.parametrize(
    ("answer", "denied"),
    [
        (ElicitResult(action="accept", content={"approve": True}), False),
        (ElicitResult(action="decline"), True),
    ],
)
def test_a_previous_revision_client_answers_a_held_call_by_elicitation(
    server: Server, mcp_keys: dict[str, str], answer: ElicitResult, denied: bool
) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return answer

    async def work() -> CallToolResult:
        async with client(server, mcp_keys["alice"], "legacy", elicit) as mcp:
            return await mcp.call_tool("careful", {"message": FILES})

    result = run(work)
    assert len(asked) == 1 and "'workspace'" in asked[0]
    assert not result.is_error
    text = result.content[0].text
    assert text.startswith("The workspace tool answered:")
    # Declined: the run went on and the model read the refusal.
    assert ("denied by alice" in text) is denied


def test_a_client_that_cannot_answer_is_told_the_approval_and_bob_cannot_decide_it(
    server: Server, mcp_keys: dict[str, str]
) -> None:
    async def work() -> CallToolResult:
        async with client(server, mcp_keys["alice"]) as mcp:
            return await mcp.call_tool("careful", {"message": FILES})

    result = run(work)
    assert result.is_error and result.structured_content["error"]["code"] == "approval_required"
    (approval,) = result.structured_content["approvals"]
    api = f"{server.url}/api/approvals/{approval}/decide/"
    refused = httpx.post(
        api,
        json={"decision": "approve"},
        headers={"Authorization": f"Bearer {mcp_keys['bob']}"},
    )
    assert refused.status_code == 404
    decided = httpx.post(
        api,
        json={"decision": "deny", "reason": "later"},
        headers={"Authorization": f"Bearer {mcp_keys['alice']}"},
    )
    assert decided.status_code == 200 and decided.json()["status"] == "denied"


def test_a_bad_key_gets_401_from_the_real_server(server: Server) -> None:
    response = httpx.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer ork_abcdefgh_" + "x" * 43},
    )
    assert response.status_code == 401 and response.headers["www-authenticate"]
