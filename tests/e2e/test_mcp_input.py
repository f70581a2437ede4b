"""An MCP server asks the user for input, in a real browser with a real SDK server on loopback:
the request shows as a form in the box where approvals wait, in every tab following the
conversation, with its fields labelled and typed (required ones marked, a description under
its field), its first field focused; an answer the server's form refuses is explained in the
form and nothing is sent on; a submitted form goes from every tab and the tool's result, with
the values, reaches the model. A request to open a page shows its address, and Done answers it.
The page stays clean (axe, console, CSP) with the form shown."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.mcp_input_server import SCRIPT
from tests.mcp_server import McpProcess
from tests.providers.server import StubServer
from tests.providers.turns import reply

from .conftest import Server
from .openai_setup import shell_json
from .test_chat import CHAT_URL, send, wait_until_idle
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

SETUP_CODE = """
from agents.models import AgentProfile, McpServer, ProviderEndpoint
endpoint, _ = ProviderEndpoint.objects.update_or_create(
    name="input-stub", defaults={"kind": "openai", "base_url": ARGS["model"]}
)
profile, _ = AgentProfile.objects.update_or_create(
    slug="booking-agent", defaults={"name": "Booking agent", "model": "input-stub/m"}
)
server, _ = McpServer.objects.update_or_create(name="asking", defaults={"url": ARGS["mcp"]})
server.profiles.add(profile)
print(json.dumps(profile.pk))
"""


@pytest.fixture(scope="module")
def asking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    log = tmp_path_factory.mktemp("mcp-input") / "server.log"
    server = McpProcess.start(log, env={"MCP_TEST_LEGACY": "1"}, script=SCRIPT)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stub(server: Server, asking: McpProcess) -> Iterator[StubServer]:
    made = StubServer().start()
    shell_json(server, SETUP_CODE, model=f"{made.url}/v1", mcp=asking.url)
    try:
        yield made
    finally:
        made.stop()


def tool_content(stub: StubServer, request: int, call: str) -> Any:
    """What the model read of the call ``call`` in its ``request``-th request."""
    messages = stub.requests[request].json()["messages"]
    return json.loads(next(m for m in messages if m.get("tool_call_id") == call)["content"])


def test_a_servers_form_is_filled_in_and_submitted_and_goes_from_every_tab(
    open_context: Callable[..., Any], stub: StubServer, screenshots: Path
) -> None:
    stub.enqueue(
        reply("openai", calls=[("c1", "asking__book_table", {"restaurant": "Chez Ada"})]),
        reply("openai", ["Booked it."]),
        reply("openai", calls=[("c2", "asking__link_account", {})]),
        reply("openai", ["Linked."]),
    )
    context = open_context("alice", viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page())
    page = watched.page
    page.goto("/")
    page.get_by_test_id("profile-select").select_option(label="Booking agent")
    page.get_by_label("Title", exact=True).fill("Dinner")
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(CHAT_URL)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    other = context.new_page()
    other.goto(page.url)
    expect(other.locator("#connection")).to_have_attribute("data-state", "open")

    send(page, "book us a table")
    request = page.get_by_test_id("approval-box").get_by_test_id("input-request")
    expect(request).to_be_in_viewport()
    expect(request.get_by_test_id("input-message")).to_have_text("Book a table at Chez Ada?")
    expect(request).to_contain_text("asking asks you:")
    form = request.get_by_test_id("input-form")
    party = form.get_by_label("Party size (required)")
    expect(party).to_have_attribute("type", "number")
    expect(party).to_have_accessible_description("How many people.")
    expect(party).to_be_focused()
    expect(form.get_by_label("Day (required)")).to_have_attribute("type", "date")
    expect(form.get_by_role("group", name="Seating (required)")).to_be_visible()
    expect(form.get_by_label("Notes", exact=True)).to_have_value("")
    expect(page.get_by_test_id("approval-announcer")).to_contain_text(
        "asking asks you: Book a table at Chez Ada?"
    )
    expect(other.get_by_test_id("input-request")).to_be_visible()
    page.screenshot(path=str(screenshots / "mcp-input-form.png"), full_page=True)
    assert watched.problems() == CLEAN

    # Past the browser's own checks (its limit taken off the box), the server's form refuses
    # the answer: the form says why, and stays.
    party.evaluate("(box) => box.removeAttribute('max')")
    party.fill("20")
    form.get_by_label("Day (required)").fill("2026-08-01")
    form.get_by_label("outdoor").check()
    form.get_by_label("Notes", exact=True).fill("by the window")
    form.get_by_test_id("input-submit").click()
    expect(form.get_by_test_id("input-error")).to_contain_text("'Party size' must be at most 12")
    expect(other.get_by_test_id("input-request")).to_be_visible()

    party.fill("4")
    party.press("Enter")  # the keyboard submits the form
    expect(page.get_by_test_id("approval-box")).to_be_hidden()
    expect(other.get_by_test_id("approval-box")).to_be_hidden()
    expect(page.locator("#transcript > .msg-assistant").last).to_contain_text("Booked it.")
    assert tool_content(stub, 1, "c1") == {
        "result": "booked 4 at Chez Ada on 2026-08-01, outdoor (by the window)"
    }
    wait_until_idle(page, 1)

    send(page, "link my account")
    link = page.get_by_test_id("input-request")
    expect(link).to_contain_text("asking asks you to open a page:")
    expect(link.get_by_test_id("input-url")).to_have_attribute(
        "href", "https://accounts.example.com/link"
    )
    expect(link.get_by_test_id("input-open")).to_be_focused()
    assert watched.problems() == CLEAN
    link.get_by_test_id("input-done").click()
    expect(page.get_by_test_id("approval-box")).to_be_hidden()
    expect(page.locator("#transcript > .msg-assistant").last).to_contain_text("Linked.")
    assert tool_content(stub, 3, "c2") == {"result": "link accept"}
