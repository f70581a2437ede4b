"""A delegate call in a real browser: while the child runs, its card shows the child's profile,
status and progress with a link to its transcript (a page that refreshes itself), before the
answer arrives; the call's result then settles the card."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.providers.server import StubServer
from tests.providers.turns import reply

from .conftest import Server
from .openai_setup import shell_json
from .test_chat import CHAT_URL, send, wait_until_idle

pytestmark = pytest.mark.e2e

ANSWER = "The helper wrote half."
# A profile that may delegate to another, both on the test's own loopback model server.
SETUP_CODE = """
from agents.models import AgentProfile, ProviderEndpoint, Tool
endpoint, _ = ProviderEndpoint.objects.update_or_create(
    name="delegate-stub", defaults={"kind": "openai", "base_url": ARGS["url"]}
)
tool, _ = Tool.objects.update_or_create(
    name="delegate", defaults={"kind": "builtin", "timeout": 60.0, "enabled": True}
)
lead, _ = AgentProfile.objects.update_or_create(
    slug="delegating-lead", defaults={"name": "Delegating lead", "model": "delegate-stub/m"}
)
helper, _ = AgentProfile.objects.update_or_create(
    slug="delegate-helper", defaults={"name": "Delegate helper", "model": "delegate-stub/m"}
)
lead.tools.add(tool)
lead.may_delegate_to.add(helper)
print(json.dumps(lead.pk))
"""


class Release(threading.Event):
    """The child's model stalls until the test sets this (longer than the stub's own bound)."""

    def wait(self, timeout: float | None = None) -> bool:
        return super().wait(60.0)


@pytest.fixture
def stub(server: Server) -> Iterator[StubServer]:
    """The loopback model server of both profiles (the Daphne server reaches it too)."""
    made = StubServer().start()
    shell_json(server, SETUP_CODE, url=f"{made.url}/v1")
    try:
        yield made
    finally:
        made.stop()


def test_the_card_shows_the_running_child_and_links_its_transcript_before_the_answer(
    alice: Any, stub: StubServer, screenshots: Path
) -> None:
    release = Release()
    stub.enqueue(
        reply("openai", calls=[("c1", "delegate", {"profile": "delegate-helper", "task": "go"})]),
        reply("openai", ["Half ", "way"], gate=release),
        reply("openai", [ANSWER]),
    )
    try:
        alice.goto("/")
        alice.get_by_test_id("profile-select").select_option(label="Delegating lead")
        alice.get_by_label("Title", exact=True).fill("Delegating")
        alice.get_by_test_id("new-conversation").click()
        expect(alice).to_have_url(CHAT_URL)
        expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
        send(alice, "hand it over")
        block = alice.get_by_test_id("tool-delegate")
        expect(block).to_have_attribute("data-status", "running")
        expect(block).to_contain_text("Delegated to delegate-helper: running")
        # The child's progress comes with its job's heartbeat.
        expect(block.get_by_test_id("tool-delegate-text")).to_have_text("…Half way")
        expect(block.get_by_test_id("tool-delegate-progress")).to_have_text("1 step")
        link = block.get_by_test_id("tool-delegate-link")
        expect(link).to_have_attribute("href", re.compile(r"^/jobs/[0-9a-f-]{36}/$"))
        expect(alice.locator("#transcript")).not_to_contain_text(ANSWER)
        alice.screenshot(path=str(screenshots / "delegate-running.png"), full_page=True)
        # Its transcript, while it runs: how far it got, and a page that reloads itself.
        job = alice.context.new_page()
        job.goto(link.get_attribute("href"))
        expect(job.get_by_test_id("job-status")).to_have_text("Running")
        expect(job.get_by_test_id("job-progress")).to_contain_text("1 step")
        expect(job.get_by_test_id("job-writing")).to_contain_text("Half way")
        expect(job.locator('meta[http-equiv="refresh"]')).to_have_count(1)
        job.screenshot(path=str(screenshots / "delegate-job-running.png"), full_page=True)
        job.close()
    finally:
        release.set()
    expect(alice.locator("#transcript > .msg-assistant").last).to_contain_text(ANSWER)
    expect(block).to_have_attribute("data-status", "done")
    expect(block.get_by_test_id("tool-delegate-text")).to_have_count(0)
    wait_until_idle(alice, 1)
