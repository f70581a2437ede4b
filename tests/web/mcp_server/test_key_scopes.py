"""Scoped API keys at ``/mcp``: the door needs ``read``, a tool call ``run``; a profile outside
the key's ``profiles`` is no tool."""

from __future__ import annotations

import httpx
import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ApiKey
from conversations.models import Conversation
from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


@pytest.fixture
def scoped_key(alice):
    async def issue(*scopes: str, profiles: list[str] | None = None) -> str:
        make = sync_to_async(ApiKey.objects.issue)
        return (await make(user=alice, name="scoped", scopes=scopes, profiles=profiles))[1]

    return issue


@pytest.fixture
def other(demo) -> AgentProfile:
    return AgentProfile.objects.create(slug="other", name="Other", model=demo.model)


async def test_a_key_without_read_is_refused_at_the_door(scoped_key, demo):
    key = await scoped_key("run")
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        response = await http.post(
            "/mcp",
            json=INITIALIZE,
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {key}",
            },
        )
    assert response.status_code == 403 and response.json()["code"] == "scope"


async def test_a_read_key_lists_the_tools_but_cannot_call_one(mcp, scoped_key, demo):
    async with mcp(key=await scoped_key("read")) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["demo"]
        result = await client.call_tool("demo", {"message": "hello"})
    assert result.is_error and result.structured_content["error"]["code"] == "scope"
    assert not await sync_to_async(Conversation.objects.exists)()


async def test_a_profile_outside_the_keys_profiles_is_no_tool(mcp, scoped_key, demo, other):
    async with mcp(key=await scoped_key("read", "run", profiles=["other"])) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["other"]
        result = await client.call_tool("demo", {"message": "hello"})
    assert result.is_error and result.structured_content["error"]["code"] == "unknown_tool"
    assert not await sync_to_async(Conversation.objects.exists)()
