"""MCP in the chat, in a real browser, with a real SDK server on loopback: an image a tool
returned is drawn on its tool card (under the page's CSP); `/` offers the server's prompts and
resources; a prompt asks for its arguments and puts its messages in the box; a resource is
attached to the message being written. One page load; axe, the console and the CSP stay clean.
And a user connects their account to an OAuth server from the settings page (the SDK's own
authorization server pieces, approving at once), the tokens never shown.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests import mcp_oauth_server
from tests.mcp_server import PIXEL, McpProcess

from .conftest import Server
from .openai_setup import shell_json
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

SETUP_CODE = """
from django.contrib.auth import get_user_model
from agents.models import AgentProfile, McpServer
from conversations.services import create_conversation
from conversations.stores import DjangoConversationStore
profile = AgentProfile.objects.get(slug="demo")
server, _ = McpServer.objects.update_or_create(name="fixture", defaults={"url": ARGS["url"]})
server.profiles.add(profile)
alice = get_user_model().objects.get(username="alice")
conversation = create_conversation(user=alice, profile=profile, title="MCP pictures")
images = [
    {"mime": "image/png", "data": ARGS["pixel"]},
    {"mime": "image/svg+xml", "data": "PHN2Zz48L3N2Zz4="},
]
messages = [
    {"id": "m1", "role": "user", "content": "Show me the pixel."},
    {"id": "m2", "role": "assistant", "content": "",
     "calls": [{"id": "c1", "name": "fixture__pixel", "arguments": {}}]},
    {"id": "m3", "role": "tool", "content": '"[image image/png shown to the user]"',
     "tool_call_id": "c1",
     "outcome": {"kind": "value", "display": {"kind": "images", "images": images}}},
    {"id": "m4", "role": "assistant", "content": "There it is."},
]
store = DjangoConversationStore(owner=alice)
store.set_sync({"id": str(conversation.pk), "sections": [], "messages": messages})
print(json.dumps({"conversation": str(conversation.pk)}))
"""


@pytest.fixture(scope="module")
def fixture_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    server = McpProcess.start(tmp_path_factory.mktemp("mcp-chat") / "mcp.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def chat(server: Server, fixture_server: McpProcess) -> dict[str, Any]:
    return shell_json(
        server, SETUP_CODE, url=fixture_server.url, pixel=base64.b64encode(PIXEL).decode()
    )


def test_images_prompts_and_resources_of_an_mcp_server_in_the_chat(
    open_context: Any, chat: dict[str, Any]
) -> None:
    page: Page = open_context("alice", viewport={"width": 1280, "height": 800}).new_page()
    watched = Watched(page)
    problems = watched.problems_at(f"/c/{chat['conversation']}/", "[data-testid=tool-images]")
    images = page.locator("[data-testid=tool-images] img")
    expect(images).to_have_count(1)  # the SVG is not drawn
    assert images.evaluate("(img) => img.complete && img.naturalWidth === 1")
    assert problems == CLEAN

    box = page.locator("#message-input")
    box.click()
    box.press_sequentially("/fixture")
    options = page.get_by_test_id("slash-option")
    expect(options.filter(has_text="/fixture__review")).to_be_visible()
    expect(options.filter(has_text="/fixture:today")).to_be_visible()
    options.filter(has_text="/fixture__review").click()

    form = page.get_by_test_id("mcp-prompt-form")
    form.get_by_label("code (required)").fill("x = 1")
    form.get_by_label("focus").fill("style")
    form.get_by_test_id("mcp-prompt-insert").click()
    expect(form).to_have_count(0)
    expect(box).to_have_value(
        "Review this code for style:\nx = 1\n\n(assistant) I will read it closely."
    )

    box.fill("")
    box.press_sequentially("/fixture:to")
    box.press("Enter")
    expect(box).to_have_value("[Attached: notes://today]\n```\nBuy milk; call Ada.\n```\n\n")
    assert watched.problems() == CLEAN


OAUTH_CODE = """
from agents.models import McpServer
McpServer.objects.update_or_create(
    name="e2e-oauth", defaults={"url": ARGS["url"], "auth": "oauth"}
)
print(json.dumps(True))
"""


def test_a_user_connects_their_account_to_an_oauth_server(
    open_context: Any, server: Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    oauth = mcp_oauth_server.start(tmp_path_factory.mktemp("oauth") / "oauth.log")
    try:
        shell_json(server, OAUTH_CODE, url=oauth.url)
        page: Page = open_context("alice", viewport={"width": 1280, "height": 800}).new_page()
        watched = Watched(page)
        problems = watched.problems_at("/settings/mcp/", "[data-server=e2e-oauth]")
        assert problems == CLEAN
        card = page.locator("[data-testid=mcp-server][data-server=e2e-oauth]")
        expect(card.get_by_test_id("credential-status")).to_contain_text("Not connected yet.")
        card.get_by_test_id("connect-account").click()
        expect(page.get_by_test_id("credential-notice")).to_contain_text(
            "Your account on e2e-oauth is connected."
        )
        expect(card.get_by_test_id("credential-status")).to_contain_text("is connected")
        assert mcp_oauth_server.stats(oauth.port) == {"exchanges": 1, "refreshes": 0}
        assert watched.problems() == CLEAN
    finally:
        oauth.stop()
