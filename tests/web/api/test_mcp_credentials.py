"""``/api/mcp/credentials/``: a user lists, enters and removes their own tokens for per-user
MCP servers; a token is never shown back, and the entered one is what a real server gets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from agents.mcp.catalog import catalog
from agents.mcp.check import check_server, endpoint_as
from agents.models import McpCredential, McpServer
from tests.mcp_server import McpProcess

pytestmark = pytest.mark.django_db

CREDENTIALS = "/api/mcp/credentials/"
TOKEN = "ghp_Alice0123456789abcdefTOKEN"
SLOT = {"server", "address", "in_use", "state", "updated", "oauth"}


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


def per_user(name: str = "github", url: str = "", **fields) -> McpServer:
    return McpServer.objects.create(
        name=name, url=url or f"https://{name}.example.com/mcp", auth="user_token", **fields
    )


def test_the_list_shows_each_open_servers_slot_never_a_token(api, alice):
    server = per_user()
    per_user("closed").groups.add(Group.objects.create(name="others"))
    McpServer.objects.create(name="shared", url="https://shared.example.com/mcp")
    McpCredential.objects.store(user_id=alice.pk, server_id=server.pk, token=TOKEN)
    response = api.get(CREDENTIALS)
    assert response.status_code == 200
    (slot,) = response.json()
    assert set(slot) == SLOT
    assert (slot["server"], slot["state"], slot["in_use"]) == ("github", "present", True)
    assert TOKEN not in response.content.decode()


def test_entering_a_token_answers_201_without_it_and_a_real_server_accepts_it(
    api, alice, tmp_path: Path
):
    mcp = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_TOKEN": TOKEN})
    try:
        server = per_user(url=mcp.url)
        refused = check_server(endpoint_as(server, alice.pk))
        response = api.post(CREDENTIALS, {"server": "github", "token": f" {TOKEN} "}, format="json")
        assert response.status_code == 201, response.json()
        assert response.json()["state"] == "present"
        assert TOKEN not in response.content.decode()
        accepted = check_server(endpoint_as(server, alice.pk))
    finally:
        mcp.stop()
    assert (refused.ok, refused.code) == (False, "mcp_user_credential_missing")
    assert accepted.ok, accepted.detail
    assert api.get(f"{CREDENTIALS}github/").json()["state"] == "present"


def test_a_bad_token_or_a_server_not_open_to_the_user_changes_nothing(api, alice):
    per_user()
    per_user("closed").groups.add(Group.objects.create(name="others"))
    McpServer.objects.create(name="shared", url="https://shared.example.com/mcp")
    bad = api.post(CREDENTIALS, {"server": "github", "token": "two words"}, format="json")
    assert bad.status_code == 400 and "token" in bad.json()["errors"]
    for name in ("closed", "shared", "nowhere"):
        refused = api.post(CREDENTIALS, {"server": name, "token": TOKEN}, format="json")
        assert refused.status_code == 404, name
        assert api.get(f"{CREDENTIALS}{name}/").status_code == 404
    assert not McpCredential.objects.exists()


def test_another_users_credential_is_a_404_and_removing_ones_own_forgets_it(
    api, alice, bob, issue_key, key_client
):
    server = per_user()
    McpCredential.objects.store(user_id=bob.pk, server_id=server.pk, token=TOKEN)
    assert api.delete(f"{CREDENTIALS}github/").status_code == 404
    assert api.get(f"{CREDENTIALS}github/").json()["state"] == "missing"
    assert McpCredential.objects.filter(user=bob).exists()
    bobs = key_client(issue_key(bob, scopes=("read", "run", "keys")))
    assert bobs.delete(f"{CREDENTIALS}github/").status_code == 204
    assert bobs.delete(f"{CREDENTIALS}github/").status_code == 404
    assert not McpCredential.objects.exists()


def test_entering_and_removing_need_the_keys_scope(alice, issue_key, key_client):
    per_user()
    reader = key_client(issue_key(alice, scopes=("read", "run")))
    assert reader.get(CREDENTIALS).status_code == 200
    refused = reader.post(CREDENTIALS, {"server": "github", "token": TOKEN}, format="json")
    assert refused.status_code == 403
    assert not McpCredential.objects.exists()


def test_the_operations_are_in_the_openapi_schema(api):
    paths = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert set(paths["/api/mcp/credentials/"]) >= {"get", "post"}
    assert set(paths["/api/mcp/credentials/{server}/"]) >= {"get", "delete"}
