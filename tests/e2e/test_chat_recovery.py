"""A failed answer in a real browser: the chat says why with a Retry button, and Retry answers
again while the failed attempt stays one flip away (the fake upstream fails once, then echoes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .test_chat import CHAT_URL, send, wait_for_answer, wait_until_idle
from .upstream import ECHO, FAIL_ONCE_TRIGGER

pytestmark = pytest.mark.e2e


def test_a_failed_answer_is_retried_from_the_note_and_the_failure_stays_reachable(
    alice: Any, keys: dict[str, str], screenshots: Path
) -> None:
    said = f"please answer {FAIL_ONCE_TRIGGER}"
    alice.goto("/")
    alice.get_by_test_id("profile-select").select_option(label="Upstream agent")
    alice.get_by_label("Title", exact=True).fill("Retry")
    alice.get_by_test_id("new-conversation").click()
    expect(alice).to_have_url(CHAT_URL)
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    send(alice, said)
    note = alice.get_by_test_id("turn-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("The last answer failed")
    # The failure survives a reload, with its Retry.
    alice.reload()
    expect(note).to_be_visible()
    expect(note.get_by_test_id("retry")).to_have_text("Retry")
    alice.screenshot(path=str(screenshots / "failed-turn.png"), full_page=True)

    note.get_by_test_id("retry").click()
    wait_for_answer(alice, ECHO + said)
    wait_until_idle(alice, 1)
    expect(note).to_be_hidden()
    nav = alice.get_by_test_id("branch-nav")
    expect(nav.get_by_test_id("branch-count")).to_have_text("2/2")
    nav.get_by_test_id("branch-prev").click()
    expect(alice.get_by_test_id("branch-count")).to_have_text("1/2")
    expect(alice.get_by_test_id("branch-empty")).to_be_visible()
