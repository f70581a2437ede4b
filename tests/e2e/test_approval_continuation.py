"""A decision on a held call in a real browser: the run goes on once, in every tab and after a
reload (one tool card, one answer), the waiting call is where the eye is, and its card says who
decided, when and with what."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .test_approvals import careful, open_careful_chat  # noqa: F401 (a fixture)
from .test_chat import send, wait_until_idle
from .upstream import TOOL_ANSWER, WRITE_TRIGGER

# ``careful``: the profile whose workspace writes ask first.
pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("careful")]


def assert_one_continuation(page: Page, decision: str) -> None:
    """The transcript holds the call once and the answer after it once."""
    assistants = page.locator("#transcript > .msg-assistant")
    expect(assistants).to_have_count(2)
    expect(page.get_by_test_id("tool-card")).to_have_count(1)
    expect(assistants.nth(0).get_by_test_id("tool-card")).to_have_count(1)
    expect(assistants.nth(1)).to_contain_text(TOOL_ANSWER)
    expect(assistants.nth(1).get_by_test_id("tool-card")).to_have_count(0)
    expect(page.get_by_test_id("tool-decision")).to_contain_text(decision)


def decide_in_two_tabs(open_context: Any, button: str) -> tuple[Page, Page]:
    """Alice holds a write in one tab, decides it with ``button``; both tabs, once idle."""
    context = open_context("alice", viewport={"width": 1280, "height": 800})
    first = context.new_page()
    open_careful_chat(first, f"Decide once ({button})")
    second = context.new_page()
    second.goto(first.url)
    expect(second.locator("#connection")).to_have_attribute("data-state", "open")
    send(first, f"please {WRITE_TRIGGER}")
    expect(second.get_by_test_id("approval")).to_have_count(1)
    first.get_by_test_id(button).click()
    for page in (first, second):
        expect(page.get_by_test_id("approval-box")).to_be_hidden()
        wait_until_idle(page, 1)
    return first, second


def test_an_approved_call_continues_once_in_every_tab_and_after_a_reload(
    open_context: Any,
) -> None:
    first, second = decide_in_two_tabs(open_context, "approval-approve")
    for page in (first, second):
        assert_one_continuation(page, "Approved by alice")
        expect(page.get_by_test_id("tool-decision")).to_contain_text('"path":"notes.md"')
    first.reload()
    expect(first.locator("#transcript")).to_have_attribute("data-synced", "true")
    assert_one_continuation(first, "Approved by alice")


def test_a_denied_call_continues_once_in_every_tab_and_after_a_reload(
    open_context: Any,
) -> None:
    first, second = decide_in_two_tabs(open_context, "approval-deny")
    for page in (first, second):
        assert_one_continuation(page, "Denied by alice")
    second.reload()
    expect(second.locator("#transcript")).to_have_attribute("data-synced", "true")
    assert_one_continuation(second, "Denied by alice")


def test_a_held_call_is_in_view_focused_and_announced_on_an_800px_window(
    alice: Page,
) -> None:
    open_careful_chat(alice, "In view")
    # A transcript taller than the window first: the box comes below it.
    for index in range(3):
        send(alice, f"line {index}\n" * 12)
        wait_until_idle(alice, index + 1)
    send(alice, f"please {WRITE_TRIGGER}")
    approve = alice.get_by_test_id("approval-approve")
    expect(approve).to_be_focused()
    expect(alice.get_by_test_id("approval-announcer")).to_contain_text(
        "A tool call waits for your approval: workspace"
    )
    wait_until_idle(alice, 4)
    # Inside the window and not under the sticky composer: the button is what is seen there.
    on_top = alice.evaluate(
        """() => {
            const button = document.querySelector("[data-testid=approval-approve]");
            const box = button.getBoundingClientRect();
            const x = box.left + box.width / 2, y = box.top + box.height / 2;
            return y > 0 && y < window.innerHeight && document.elementFromPoint(x, y) === button;
        }"""
    )
    assert on_top, "Approve is out of view or covered"
