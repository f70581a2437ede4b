"""MCP servers in a real browser: the operator adds one in the admin, checks its connection and
refreshes its tools (a real SDK server on loopback); a user enters, replaces and removes their
own credential for a per-user server on ``/settings/mcp/``, which never shows it back. axe
finds nothing serious or critical on these pages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.mcp_server import McpProcess

from .axe import axe_violations
from .conftest import Server
from .openai_setup import shell_json

pytestmark = pytest.mark.e2e

TOKEN = "e2e-alice-token-0123456789"
REPLACED = "e2e-alice-token-replaced-42"

SETUP_CODE = """
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from agents.models import McpServer
user, _ = get_user_model().objects.get_or_create(
    username="mcp-operator", defaults={"is_staff": True, "is_superuser": True}
)
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
McpServer.objects.update_or_create(
    name="e2e-personal", defaults={"url": ARGS["guarded"], "auth": "user_token"}
)
print(json.dumps({"session": session.session_key}))
"""

STORED_CODE = """
from agents.models import McpCredential
row = McpCredential.objects.filter(user__username="alice", server__name="e2e-personal").first()
print(json.dumps(None if row is None else row.token))
"""


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, McpProcess]]:
    folder: Path = tmp_path_factory.mktemp("mcp")
    open_ = McpProcess.start(folder / "open.log")
    guarded = McpProcess.start(folder / "guarded.log", env={"MCP_TEST_TOKEN": TOKEN})
    try:
        yield {"open": open_, "guarded": guarded}
    finally:
        open_.stop()
        guarded.stop()


@pytest.fixture(scope="module")
def rows(server: Server, fixtures: dict[str, McpProcess]) -> dict[str, Any]:
    return shell_json(server, SETUP_CODE, guarded=fixtures["guarded"].url)


@pytest.fixture
def operator(open_context: Callable[..., Any], server: Server, rows: dict[str, Any]) -> Page:
    context = open_context(viewport={"width": 1280, "height": 800})
    context.add_cookies([{"name": server.cookie, "value": rows["session"], "url": server.url}])
    return context.new_page()


def no_blocking_violations(page: Page) -> None:
    assert axe_violations(page) == [], page.url


def act(page: Page, server: str, action: str) -> None:
    page.goto("/admin/agents/mcpserver/")
    row = page.locator("#result_list tr", has=page.get_by_role("link", name=server, exact=True))
    row.locator("input.action-select").check()
    page.locator("select[name=action]").select_option(action)
    page.locator("button[name=index]").click()


def test_the_operator_adds_a_server_checks_it_and_refreshes_its_tools(
    operator: Page, fixtures: dict[str, McpProcess]
) -> None:
    page = operator
    page.goto("/admin/agents/mcpserver/add/")
    no_blocking_violations(page)
    page.locator("#id_name").fill("e2e-open")
    page.locator("#id_url").fill(fixtures["open"].url)
    page.locator("input[name=_save]").click()
    expect(page.locator(".messagelist .success").first).to_be_visible()
    no_blocking_violations(page)

    act(page, "e2e-open", "check_connection")
    expect(page.locator(".messagelist .success")).to_contain_text("OK: 8 tools offered")

    act(page, "e2e-open", "refresh_tools")
    expect(page.locator(".messagelist .success")).to_contain_text("e2e-open__echo")
    page.get_by_role("link", name="e2e-open", exact=True).click()
    offered = page.locator(".field-offered_tools")
    expect(offered).to_contain_text("e2e-open__lookup — read-only")
    expect(offered).to_contain_text("e2e-open__delete_item — write")
    no_blocking_violations(page)


def test_a_user_enters_replaces_and_removes_their_credential_never_shown_back(
    alice: Page, server: Server, rows: dict[str, Any]
) -> None:
    page = alice
    page.goto("/conversations/")
    page.get_by_test_id("mcp-link").click()
    card = page.locator("[data-testid=mcp-server][data-server=e2e-personal]")
    expect(card.get_by_test_id("credential-status")).to_contain_text("No credential yet.")
    no_blocking_violations(page)

    card.get_by_label("Your token").fill(TOKEN)
    card.get_by_test_id("save-credential").click()
    expect(page.get_by_test_id("credential-notice")).to_contain_text(
        "Your credential for e2e-personal is saved."
    )
    expect(card.get_by_test_id("credential-status")).to_contain_text("Your credential is saved")
    expect(card.get_by_label("New token")).to_have_value("")
    assert TOKEN not in page.content()
    assert shell_json(server, STORED_CODE) == TOKEN
    no_blocking_violations(page)

    card.get_by_label("New token").fill(REPLACED)
    card.get_by_test_id("save-credential").click()
    expect(page.get_by_test_id("credential-notice")).to_contain_text("is saved")
    assert REPLACED not in page.content()
    assert shell_json(server, STORED_CODE) == REPLACED

    card.get_by_test_id("remove-credential").click()
    expect(page.get_by_test_id("credential-notice")).to_contain_text(
        "Your credential for e2e-personal is removed."
    )
    expect(card.get_by_test_id("credential-status")).to_contain_text("No credential yet.")
    assert shell_json(server, STORED_CODE) is None

    card.get_by_label("Your token").fill("two words")
    card.get_by_test_id("save-credential").click()
    expect(card.get_by_test_id("credential-error")).to_contain_text("no spaces")
    no_blocking_violations(page)
