"""Users' own MCP credentials: sealed at rest with a key outside the database, entered,
replaced and removed on ``/settings/mcp/`` (never shown back), and used by the admin's look
at a server with the operator's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents.mcp.catalog import catalog
from agents.mcp.credentials import credential_slots, with_credentials
from agents.mcp.endpoint import endpoint_of
from agents.mcp.sealing import KEY_VARIABLE, seal, unseal
from agents.models import McpCredential, McpServer
from tests.mcp_server import McpProcess

pytestmark = pytest.mark.django_db

TOKEN = "ghp_Alice0123456789abcdefTOKEN"
PAGE = "/settings/mcp/"


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def signed_in(client, alice):
    client.force_login(alice)
    return client


def per_user(name: str = "github", **fields) -> McpServer:
    return McpServer.objects.create(
        name=name, url=f"https://{name}.example.com/mcp", auth="user_token", **fields
    )


def credential_of(user, server) -> McpCredential:
    return McpCredential.objects.get(user=user, server=server)


# -- sealing --


def test_a_token_is_stored_sealed_and_opens_only_with_the_key(alice, monkeypatch):
    server = per_user()
    McpCredential.objects.store(user_id=alice.pk, server_id=server.pk, token=TOKEN)
    row = McpCredential.objects.filter(user=alice).values().get()
    assert not any(TOKEN in str(value) for value in row.values())
    assert credential_of(alice, server).token == TOKEN
    # Another key (the secret changed with no fallback) opens nothing: unreadable, not wrong.
    monkeypatch.setenv(KEY_VARIABLE, "another-secret")
    assert credential_of(alice, server).token is None
    (endpoint,) = with_credentials([endpoint_of(server, related=False)], alice.pk)
    assert endpoint.credential is not None and endpoint.credential.state == "unreadable"


def test_a_dedicated_key_rotates_with_the_old_one_kept_after_it(monkeypatch, settings):
    monkeypatch.setenv(KEY_VARIABLE, "first-secret")
    sealed = seal(TOKEN)
    monkeypatch.setenv(KEY_VARIABLE, "second-secret, first-secret")
    assert unseal(sealed) == TOKEN
    resealed = seal(TOKEN)
    monkeypatch.setenv(KEY_VARIABLE, "second-secret")
    assert unseal(resealed) == TOKEN and unseal(sealed) is None
    # Without the variable, SECRET_KEY keys it (its fallbacks still open).
    monkeypatch.delenv(KEY_VARIABLE)
    sealed = seal(TOKEN)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-for-this-test-only-0123456789abcdef"
    assert unseal(sealed) == TOKEN


def test_a_token_must_be_one_word_of_visible_characters(alice):
    server = per_user()
    for bad in ("", "two words", "line\nbreak", "x" * 8193, "naïve"):
        with pytest.raises(ValidationError):
            McpCredential.objects.store(user_id=alice.pk, server_id=server.pk, token=bad)
    assert not McpCredential.objects.exists()


def test_a_per_user_server_needs_no_variable_and_refuses_one():
    server = McpServer(name="gh", url="https://gh.example.com/mcp", auth="user_token")
    server.full_clean()
    server.bearer_env = "GH_TOKEN"
    with pytest.raises(ValidationError) as error:
        server.full_clean()
    assert "auth" in error.value.message_dict


def test_a_credential_goes_with_its_user_and_its_server(alice):
    server = per_user()
    McpCredential.objects.store(user_id=alice.pk, server_id=server.pk, token=TOKEN)
    server.delete()
    assert not McpCredential.objects.exists()


# -- the settings page --


def test_the_page_lists_the_per_user_servers_open_to_the_user_and_never_a_token(signed_in, alice):
    mine = per_user("github")
    McpCredential.objects.store(user_id=alice.pk, server_id=mine.pk, token=TOKEN)
    per_user("jira")
    McpServer.objects.create(name="shared", url="https://s.example.com/mcp")
    per_user("off", enabled=False)
    closed = per_user("closed")
    closed.users.add(get_user_model().objects.create_user("bob", password="pw-bob-1234"))
    team = per_user("team")
    group = Group.objects.create(name="team")
    team.groups.add(group)
    response = signed_in.get(PAGE)
    html = response.content.decode()
    assert response.status_code == 200
    assert [slot.name for slot in credential_slots(alice.pk)] == ["github", "jira"]
    assert 'data-server="github" data-state="present"' in html
    assert 'data-server="jira" data-state="missing"' in html
    assert "closed" not in html and "shared" not in html and 'data-server="off"' not in html
    assert TOKEN not in html and mine.credentials.get().sealed not in html
    assert response["Cache-Control"].startswith("max-age=0")
    # CSP is strict: no inline script or style.
    assert "<script>" not in html and "style=" not in html
    alice.groups.add(group)
    assert "team" in [slot.name for slot in credential_slots(alice.pk)]


def test_entering_replacing_and_removing_a_credential(signed_in, alice):
    server = per_user()
    url = reverse("agents:mcp-credential", args=["github"])
    response = signed_in.post(url, {"token": f"  {TOKEN}\n"}, follow=True)
    assert response.redirect_chain == [(f"{PAGE}?done=saved&server=github", 302)]
    assert "Your credential for github is saved." in response.content.decode()
    assert credential_of(alice, server).token == TOKEN
    assert TOKEN not in response.content.decode()
    signed_in.post(url, {"token": "replaced-token"})
    assert credential_of(alice, server).token == "replaced-token"
    assert McpCredential.objects.count() == 1
    response = signed_in.post(reverse("agents:mcp-credential-remove", args=["github"]), follow=True)
    assert "Your credential for github is removed." in response.content.decode()
    assert not McpCredential.objects.exists()
    assert 'data-state="missing"' in response.content.decode()


def test_a_bad_token_is_refused_with_the_reason_beside_its_field(signed_in):
    per_user()
    response = signed_in.post(
        reverse("agents:mcp-credential", args=["github"]), {"token": "two words"}
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert 'data-testid="credential-error"' in html and "no spaces" in html
    assert 'aria-invalid="true"' in html and "two words" not in html
    assert not McpCredential.objects.exists()


def test_no_token_for_a_server_the_user_may_not_use_or_that_takes_none(signed_in):
    closed = per_user("closed")
    closed.users.add(get_user_model().objects.create_user("bob", password="pw-bob-1234"))
    McpServer.objects.create(name="shared", url="https://s.example.com/mcp")
    for name in ("closed", "shared", "missing"):
        url = reverse("agents:mcp-credential", args=[name])
        assert signed_in.post(url, {"token": TOKEN}).status_code == 404
    assert not McpCredential.objects.exists()


def test_removing_touches_only_the_users_own_credential(signed_in, alice):
    server = per_user()
    bob = get_user_model().objects.create_user("bob", password="pw-bob-1234")
    McpCredential.objects.store(user_id=bob.pk, server_id=server.pk, token="bobs-token")
    signed_in.post(reverse("agents:mcp-credential-remove", args=["github"]))
    assert credential_of(bob, server).token == "bobs-token"


def test_a_kept_credential_of_a_server_no_longer_per_user_can_still_be_removed(signed_in, alice):
    server = per_user()
    McpCredential.objects.store(user_id=alice.pk, server_id=server.pk, token=TOKEN)
    McpServer.objects.filter(pk=server.pk).update(auth="none")
    html = signed_in.get(PAGE).content.decode()
    assert "This server no longer uses it." in html and 'data-testid="save-credential"' not in html
    signed_in.post(reverse("agents:mcp-credential-remove", args=["github"]))
    assert not McpCredential.objects.exists()


def test_the_pages_need_a_signed_in_user_and_writes_a_post(client, signed_in):
    per_user()
    url = reverse("agents:mcp-credential", args=["github"])
    assert signed_in.get(url).status_code == 405
    client.logout()
    assert client.get(PAGE).status_code == 302
    assert client.post(url, {"token": TOKEN}).status_code == 302
    assert not McpCredential.objects.exists()


# -- the admin looks with the operator's own credential --


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[McpProcess]:
    server = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_TOKEN": TOKEN})
    try:
        yield server
    finally:
        server.stop()


def test_the_admin_checks_and_refreshes_a_per_user_server_with_the_operators_credential(
    admin_client, admin_user, guarded
):
    server = McpServer.objects.create(name="fixture", url=guarded.url, auth="user_token")
    changelist = reverse("admin:agents_mcpserver_changelist")

    def act(action: str) -> str:
        response = admin_client.post(
            changelist, {"action": action, "_selected_action": [server.pk]}, follow=True
        )
        return response.content.decode()

    assert "needs your credential: add it in Settings → MCP servers" in act("check_connection")
    McpCredential.objects.store(user_id=admin_user.pk, server_id=server.pk, token=TOKEN)
    assert "Fixture: OK: 8 tools offered" in act("check_connection")
    assert "fixture__echo" in act("refresh_tools")
    server.refresh_from_db()
    assert "echo" in {tool["name"] for tool in server.offered}
    assert "per user: 1 user has entered theirs" in act("check_connection")
