"""A long tool call in a real browser: its card shows the tail of the command's output and the
time it has run, in this tab and in one that joins mid-call; the header's Tools readout lists
what the agent can do; the answer names the model that wrote it; the page stays clean (axe,
console, CSP) with the readout open and the call running."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.providers.server import StubServer
from tests.providers.turns import reply

from .conftest import Server
from .openai_setup import shell_json
from .test_chat import CHAT_URL, send
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

# A profile with one command tool that prints two lines and then runs for a while.
SETUP_CODE = """
from agents.models import AgentProfile, ProviderEndpoint, Tool
endpoint, _ = ProviderEndpoint.objects.update_or_create(
    name="progress-stub", defaults={"kind": "openai", "base_url": ARGS["url"]}
)
tool, _ = Tool.objects.update_or_create(
    name="ticker",
    defaults={
        "kind": "command", "program": "sh", "safe": True, "timeout": 60.0, "enabled": True,
        "argv": ["-c", "echo compiling; echo linking; sleep {seconds}"],
        "description": "Build the project.",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "integer"}}},
    },
)
profile, _ = AgentProfile.objects.update_or_create(
    slug="ticking-agent", defaults={"name": "Ticking agent", "model": "progress-stub/m"}
)
profile.tools.set([tool])
print(json.dumps(profile.pk))
"""


@pytest.fixture
def stub(server: Server) -> Iterator[StubServer]:
    made = StubServer().start()
    shell_json(server, SETUP_CODE, url=f"{made.url}/v1")
    try:
        yield made
    finally:
        made.stop()


def test_a_running_command_shows_its_output_and_time_and_the_tools_readout_lists_it(
    open_context: Callable[..., Any], stub: StubServer, screenshots: Path
) -> None:
    stub.enqueue(reply("openai", calls=[("c1", "ticker", {"seconds": 30})]))
    watched = Watched(open_context("alice", viewport={"width": 1280, "height": 800}).new_page())
    page = watched.page
    page.goto("/")
    page.get_by_test_id("profile-select").select_option(label="Ticking agent")
    page.get_by_label("Title", exact=True).fill("Build it")
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(CHAT_URL)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")

    # What the agent can do, from the header.
    page.get_by_test_id("tools-toggle").click()
    entry = page.get_by_test_id("tools-entry")
    expect(entry).to_have_count(1)
    expect(entry).to_contain_text("ticker")
    expect(entry).to_contain_text("read-only")
    expect(entry).to_contain_text("Build the project.")
    expect(page.get_by_test_id("tools-status")).to_have_text("1 tool.")

    send(page, "build it")
    card = page.get_by_test_id("tool-card")
    expect(card.get_by_test_id("tool-running")).to_be_visible()
    expect(card.get_by_test_id("tool-output-tail")).to_have_text("compiling\nlinking")
    # The clock moves while the command runs.
    expect(card.get_by_test_id("tool-elapsed")).to_have_text(re.compile(r"^[1-9]\d* s$"))
    assert watched.problems() == CLEAN
    page.screenshot(path=str(screenshots / "tool-progress.png"), full_page=True)

    # A tab that opens the conversation now finds the call running, with its output.
    joined = open_context("alice", viewport={"width": 1280, "height": 800}).new_page()
    joined.goto(page.url)
    late = joined.get_by_test_id("tool-card")
    expect(late.get_by_test_id("tool-running")).to_be_visible()
    expect(late.get_by_test_id("tool-output-tail")).to_have_text("compiling\nlinking")
    expect(late.get_by_test_id("tool-elapsed")).to_have_text(re.compile(r"^[1-9]\d* s$"))

    page.get_by_test_id("stop").click()
    expect(card.get_by_test_id("tool-running")).to_have_count(0)
    expect(card.get_by_test_id("tool-elapsed")).to_have_count(0)
    # The answer names the model its run called.
    model = page.locator("#transcript > .msg-assistant").last.get_by_test_id("message-model")
    expect(model).to_have_attribute("title", re.compile(r"progress-stub/m"))
