"""Human approval in a real browser: a workspace write an ``ask`` rule holds shows in the
chat with its arguments, and Approve runs it, Deny answers the model with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Server
from .openai_setup import shell_json
from .test_chat import CHAT_URL, send, wait_until_idle
from .upstream import TOOL_ANSWER, WRITE_TRIGGER

pytestmark = pytest.mark.e2e

# A profile on the fake upstream whose workspace writes ask their owner first.
SETUP_CODE = """
from agents.models import AgentProfile, AuthorityPolicy, AuthorityRule, Tool
policy, _ = AuthorityPolicy.objects.get_or_create(name="ask before writing")
AuthorityRule.objects.get_or_create(
    policy=policy, position=1, tool_glob="workspace",
    defaults={"conditions": {"operation": {"equals": "write"}}, "verdict": "ask", "zone": "files"},
)
profile, _ = AgentProfile.objects.get_or_create(
    slug="careful-agent",
    defaults={"name": "Careful agent", "model": "fake-upstream/fake-model", "limit": 4,
              "authority_policy": policy},
)
profile.tools.set(Tool.objects.filter(name="workspace"))
print(json.dumps(profile.pk))
"""


@pytest.fixture
def careful(server: Server, keys: dict[str, str]) -> None:
    """The ``Careful agent`` profile (``keys`` made the fake upstream's endpoint)."""
    shell_json(server, SETUP_CODE)


def open_careful_chat(page: Any, title: str) -> None:
    page.goto("/")
    page.get_by_test_id("profile-select").select_option(label="Careful agent")
    page.get_by_label("Title", exact=True).fill(title)
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(CHAT_URL)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")


def test_a_held_write_is_approved_from_the_chat_and_runs(
    alice: Any, careful: None, screenshots: Path
) -> None:
    open_careful_chat(alice, "Approve a write")
    send(alice, f"please {WRITE_TRIGGER}")
    box = alice.get_by_test_id("approval-box")
    expect(box).to_be_visible()
    expect(box.get_by_test_id("approval-arguments")).to_have_value(
        '{\n  "operation": "write",\n  "path": "notes.md",\n  "content": "approved words"\n}'
    )
    alice.screenshot(path=str(screenshots / "approval.png"), full_page=True)
    # Edited before approving: the edited arguments run.
    box.get_by_test_id("approval-edit").click()
    box.get_by_test_id("approval-arguments").fill(
        '{"operation": "write", "path": "edited.md", "content": "approved words"}'
    )
    box.get_by_test_id("approval-approve").click()
    expect(box).to_be_hidden()
    answer = alice.locator("#transcript > .msg-assistant").last
    expect(answer).to_contain_text(TOOL_ANSWER)
    expect(answer).to_contain_text("edited.md")
    wait_until_idle(alice, 1)
    alice.reload()
    expect(alice.get_by_test_id("approval-box")).to_be_hidden()
    expect(alice.locator('.tool-card [data-testid="tool-denied"]')).to_have_count(0)


def test_a_held_write_is_denied_with_a_reason_the_model_reads(alice: Any, careful: None) -> None:
    open_careful_chat(alice, "Deny a write")
    send(alice, f"please {WRITE_TRIGGER}")
    box = alice.get_by_test_id("approval-box")
    expect(box).to_be_visible()
    # A reload (or another tab) shows the same waiting call.
    alice.reload()
    box = alice.get_by_test_id("approval-box")
    expect(box.get_by_test_id("approval")).to_have_count(1)
    # A decision goes over the socket: until it is open again the chat says so and sends nothing.
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    box.get_by_test_id("approval-reason").fill("not my notes")
    box.get_by_test_id("approval-deny").click()
    expect(box).to_be_hidden()
    answer = alice.locator("#transcript > .msg-assistant").last
    expect(answer).to_contain_text("denied by alice: not my notes")
    expect(alice.locator('.tool-card [data-testid="tool-denied"]')).to_have_count(1)
