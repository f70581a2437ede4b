"""Who may use ``/mcp``: the REST API's keys (a missing or bad one gets ``401``), on a host
Django serves (another gets ``421``); a session answers only the key that opened it."""

from __future__ import annotations

import httpx
import pytest
from asgiref.sync import sync_to_async
from mcp.shared.exceptions import MCPError

from agents.models import ApiKey
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
ACCEPT = "application/json, text/event-stream"


def errors_in(group: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however deeply nested."""
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in errors_in(inner)]
    return [group]


async def post(headers: dict[str, str], host: str = "testserver") -> httpx.Response:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as http:
        return await http.post("/mcp", json=INITIALIZE, headers={"Accept": ACCEPT, **headers})


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer ork_abcdefgh_" + "x" * 43, "Bearer sk-not-ours", "Basic YWxpY2U6cHc="],
)
async def test_a_missing_or_bad_key_gets_401(authorization, demo):
    headers = {"Authorization": authorization} if authorization else {}
    response = await post(headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["code"] == "invalid_api_key"


async def test_a_revoked_key_gets_401(alice, alice_key, demo):
    assert (await post({"Authorization": f"Bearer {alice_key}"})).status_code == 200
    await sync_to_async(ApiKey.objects.filter(user=alice).revoke)()
    assert (await post({"Authorization": f"Bearer {alice_key}"})).status_code == 401


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_lists_with_a_good_key_and_nothing_with_a_bad_one(mcp, demo, mode):
    async with mcp(mode=mode) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["demo"]
    with pytest.raises(BaseExceptionGroup) as raised:
        async with mcp(key="ork_abcdefgh_" + "x" * 43, mode=mode) as client:
            await client.list_tools()
    assert any(isinstance(error, MCPError) for error in errors_in(raised.value))


async def test_a_good_key_opens_a_session(alice_key, demo):
    response = await post({"Authorization": f"Bearer {alice_key}"})
    assert response.status_code == 200 and response.headers["mcp-session-id"]


async def test_a_host_django_does_not_serve_gets_421(alice_key, demo):
    response = await post({"Authorization": f"Bearer {alice_key}"}, host="evil.example")
    assert response.status_code == 421


async def test_the_sdk_refuses_a_host_outside_its_list_too(settings, alice_key, demo):
    # A pattern Django accepts but the SDK's list cannot hold: the door checks it alone.
    settings.ALLOWED_HOSTS = [".example.org"]
    ok = await post({"Authorization": f"Bearer {alice_key}"}, host="mcp.example.org")
    assert ok.status_code == 200
    refused = await post({"Authorization": f"Bearer {alice_key}"}, host="mcp.example.com")
    assert refused.status_code == 421


async def test_a_session_answers_only_the_key_that_opened_it(alice_key, bob_key, demo):
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        opened = await http.post(
            "/mcp",
            json=INITIALIZE,
            headers={"Accept": ACCEPT, "Authorization": f"Bearer {alice_key}"},
        )
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        stranger = await http.post(
            "/mcp",
            json=listing,
            headers={
                "Accept": ACCEPT,
                "Authorization": f"Bearer {bob_key}",
                "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-11-25",
            },
        )
    assert stranger.status_code == 404


async def test_other_paths_still_reach_django(alice_key, demo):
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        response = await http.get("/v1/models", headers={"Authorization": f"Bearer {alice_key}"})
    assert response.status_code == 200 and response.json()["data"][0]["id"] == "demo"
