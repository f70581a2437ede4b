"""OAuth 2.1 with PKCE per user: a user connects their account to an MCP server that requires
it (a real SDK server with the SDK's authorization server pieces, in a subprocess) from
``/settings/mcp/``; the tokens are sealed, never shown; runs call the server with them, and a
token about to expire is refreshed first and sealed again."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.test import Client

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.mcp.catalog import catalog
from agents.mcp.check import check_server, endpoint_as
from agents.mcp.credentials import store_grant
from agents.mcp.oauth_grant import OAuthGrant
from agents.mcp.oauth_refresh import forget_grants
from agents.mcp.sealing import unseal
from agents.models import McpCredential, McpServer
from conversations.services import create_conversation
from tests import mcp_oauth_server
from tests.mcp_server import McpProcess
from tests.web.runtime.test_mcp_tools import run, value

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = "/settings/mcp/"


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    catalog.clear()
    forget_grants()
    yield
    catalog.clear()
    forget_grants()


@pytest.fixture
def oauth(tmp_path: Path) -> Iterator[McpProcess]:
    server = mcp_oauth_server.start(tmp_path / "oauth.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def ada():
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def connect(client: Client, server: str = "secure") -> tuple[str, str]:
    """Click Connect, let the authorization server approve; the callback's path and query."""
    started = client.post(f"{PAGE}{server}/connect/")
    assert started.status_code == 200, started.content[:500]
    link = re.search(r'href="([^"]+)" data-testid="continue-sign-in"', started.content.decode())
    assert link is not None
    authorize = html.unescape(link.group(1))
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["resource"] and query["state"]
    approved = httpx.get(authorize, follow_redirects=False, timeout=10)
    assert approved.status_code in (302, 303), approved.text
    back = urlsplit(approved.headers["location"])
    assert back.path == f"{PAGE}oauth/callback/"
    return back.path, back.query


def test_a_user_connects_their_account_and_runs_call_the_server_as_them(oauth, ada):
    profile = ensure_demo_profile()
    row = McpServer.objects.create(name="secure", url=oauth.url, auth="oauth")
    row.profiles.add(profile)
    client = signed_in(ada)
    assert "Connect your account" in client.get(PAGE).content.decode()
    conversation = create_conversation(user=ada, profile=profile, title="t")
    before = check_server(endpoint_as(row, ada.pk))
    assert (before.ok, before.code) == (False, "mcp_user_credential_missing")
    assert "connect it in" in before.detail

    path, query = connect(client)
    done = client.get(f"{path}?{query}")
    assert done.status_code == 302 and "done=connected" in done["Location"]
    sealed = McpCredential.objects.get(user=ada).sealed
    grant = OAuthGrant.from_json(unseal(sealed) or "")
    assert grant is not None and grant.tokens.access_token not in sealed
    page = client.get(done["Location"]).content.decode()
    assert "Your account on secure is connected." in page
    assert grant.tokens.access_token not in page and (grant.tokens.refresh_token or "-") not in page
    # The same state cannot be used twice.
    assert client.get(f"{path}?{query}").status_code == 400

    _, result, (whoami,) = async_to_sync(run)(ada, conversation, ("secure__whoami", {}))
    assert value(whoami) == {"result": "subject=ada"}
    assert mcp_oauth_server.stats(oauth.port) == {"exchanges": 1, "refreshes": 0}


def test_a_token_about_to_expire_is_refreshed_before_the_call_and_sealed_again(oauth, ada):
    profile = ensure_demo_profile()
    server = McpServer.objects.create(name="secure", url=oauth.url, auth="oauth")
    server.profiles.add(profile)
    path, query = connect(signed_in(ada))
    assert signed_in(ada).get(f"{path}?{query}").status_code == 400  # another session's state
    client = signed_in(ada)
    path, query = connect(client)
    client.get(f"{path}?{query}")
    grant = OAuthGrant.from_json(unseal(McpCredential.objects.get(user=ada).sealed) or "")
    assert grant is not None
    store_grant(ada.pk, server.pk, replace(grant, expires_at=grant.expires_at and 0.0))
    conversation = create_conversation(user=ada, profile=profile, title="t")
    _, _, (whoami,) = async_to_sync(run)(ada, conversation, ("secure__whoami", {}))
    assert value(whoami) == {"result": "subject=ada"}
    assert mcp_oauth_server.stats(oauth.port)["refreshes"] == 1
    renewed = OAuthGrant.from_json(unseal(McpCredential.objects.get(user=ada).sealed) or "")
    assert renewed is not None and renewed.tokens.access_token != grant.tokens.access_token
    assert not renewed.stale


def test_a_server_not_open_to_the_user_or_not_oauth_cannot_be_connected(oauth, ada):
    McpServer.objects.create(name="plain", url=oauth.url, auth="user_token")
    client = signed_in(ada)
    assert client.post(f"{PAGE}plain/connect/").status_code == 404
    assert client.post(f"{PAGE}nowhere/connect/").status_code == 404
    assert not McpCredential.objects.exists()
