"""Alternatives in a real browser: regenerate an answer and flip between the two, edit a
message and flip back to the original (``< 1/2 >``), against the offline demo model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .test_chat import demo_echo, new_chat, send, wait_for_answer, wait_until_idle

pytestmark = pytest.mark.e2e


def answer_id(page: Any) -> str:
    return page.locator("#transcript > .msg-assistant").last.get_attribute("data-message-id")


def wait_for_new_answer(page: Any, before: str, full: str) -> None:
    """Wait until the latest answer is a committed message other than ``before``, reading
    ``full``, and nothing streams any more."""
    page.wait_for_function(
        """([before, full]) => {
            const answers = document.querySelectorAll(
                "#transcript > .msg-assistant[data-message-id]");
            const last = answers[answers.length - 1];
            const streaming = document.getElementById("chat").classList.contains("is-streaming");
            return last && last.dataset.messageId !== before && !streaming
                && last.querySelector(".msg-body").textContent.trim() === full;
        }""",
        arg=[before, full],
    )


def test_regenerating_an_answer_keeps_both_and_flips_between_them(
    alice: Any, screenshots: Path
) -> None:
    said = "tell me twice"
    new_chat(alice, "Regenerate")
    send(alice, said)
    wait_for_answer(alice, demo_echo(said))
    wait_until_idle(alice, 1)
    first = answer_id(alice)
    alice.get_by_test_id("regenerate").click()
    wait_for_new_answer(alice, first, demo_echo(said))
    second = answer_id(alice)
    nav = alice.get_by_test_id("branch-nav")
    expect(nav.get_by_test_id("branch-count")).to_have_text("2/2")
    expect(alice.locator("#transcript > .msg")).to_have_count(2)
    alice.screenshot(path=str(screenshots / "regenerated.png"), full_page=True)

    nav.get_by_test_id("branch-prev").click()
    expect(alice.get_by_test_id("branch-count")).to_have_text("1/2")
    expect(alice.locator("#transcript > .msg-assistant")).to_have_attribute(
        "data-message-id", first
    )
    # Durable: a reload shows the chosen answer, then flip forward again.
    alice.reload()
    expect(alice.get_by_test_id("branch-count")).to_have_text("1/2")
    expect(alice.locator("#transcript > .msg-assistant")).to_have_attribute(
        "data-message-id", first
    )
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    alice.get_by_test_id("branch-next").click()
    expect(alice.get_by_test_id("branch-count")).to_have_text("2/2")
    expect(alice.locator("#transcript > .msg-assistant")).to_have_attribute(
        "data-message-id", second
    )


def test_editing_a_message_answers_the_new_text_and_the_original_is_one_flip_away(
    alice: Any, screenshots: Path
) -> None:
    new_chat(alice, "Edit")
    send(alice, "first wording")
    wait_for_answer(alice, demo_echo("first wording"))
    wait_until_idle(alice, 1)
    before = answer_id(alice)
    alice.locator("#transcript > .msg-user").get_by_test_id("edit").click()
    editor = alice.get_by_test_id("edit-input")
    expect(editor).to_have_value("first wording")
    editor.fill("second wording")
    alice.get_by_test_id("edit-send").click()
    wait_for_new_answer(alice, before, demo_echo("second wording"))
    user = alice.locator("#transcript > .msg-user")
    expect(user).to_have_count(1)
    expect(user.locator(".msg-body")).to_have_text("second wording")
    expect(user.get_by_test_id("branch-count")).to_have_text("2/2")
    alice.screenshot(path=str(screenshots / "edited.png"), full_page=True)

    user.get_by_test_id("branch-prev").click()
    expect(alice.locator("#transcript > .msg-user .msg-body")).to_have_text("first wording")
    expect(alice.get_by_test_id("branch-count")).to_have_text("1/2")
    expect(alice.locator("#transcript > .msg-assistant .msg-body")).to_have_text(
        demo_echo("first wording")
    )
