"""Forking a chat and choosing its model in a real browser (the chat's REST calls with the
session and its CSRF token), against the served app and the offline demo model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .test_chat import (
    CHAT_URL,
    SEED_LONG_CHAT,
    demo_echo,
    new_chat,
    send,
    wait_for_answer,
    wait_for_partial_answer,
    wait_until_idle,
)
from .upstream import ECHO, MODEL

pytestmark = pytest.mark.e2e


def test_forking_at_an_answer_opens_an_independent_copy(alice: Any, screenshots: Path) -> None:
    source = new_chat(alice, "Branching")
    send(alice, "first question")
    wait_for_answer(alice, demo_echo("first question"))
    wait_until_idle(alice, 1)
    alice.locator("#transcript > .msg-assistant [data-testid=fork]").first.click()
    expect(alice).not_to_have_url(source)
    expect(alice).to_have_url(CHAT_URL)
    expect(alice.get_by_test_id("forked-from")).to_contain_text("Branching")
    expect(alice.locator("#chat-title")).to_have_text("Branching (fork)")
    expect(alice.locator("#transcript > .msg")).to_have_count(2)
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    send(alice, "only in the fork")
    wait_until_idle(alice, 2)
    alice.screenshot(path=str(screenshots / "fork.png"), full_page=True)
    alice.goto(source)
    expect(alice.locator("#transcript > .msg")).to_have_count(2)
    expect(alice.locator("#transcript")).not_to_contain_text("only in the fork")


def test_choosing_the_thinking_level_sticks_and_a_refused_model_is_put_back(
    alice: Any,
) -> None:
    new_chat(alice, "Models")
    alice.get_by_test_id("thinking-select").select_option("high")
    expect(alice.get_by_test_id("notice").last).to_contain_text("high")
    alice.get_by_test_id("read-only").check()
    expect(alice.get_by_test_id("notice").last).to_contain_text("Read-only")
    alice.reload()
    expect(alice.get_by_test_id("thinking-select")).to_have_value("high")
    expect(alice.get_by_test_id("read-only")).to_be_checked()
    # An option the server does not offer (as a stale page could hold): refused, put back.
    alice.evaluate(
        """() => {
            const select = document.getElementById("model-select");
            select.append(new Option("gone/model", "gone/model"));
        }"""
    )
    alice.get_by_test_id("model-select").select_option("gone/model")
    expect(alice.get_by_test_id("notice").last).to_contain_text(re.compile("Choose one"))
    expect(alice.get_by_test_id("model-select")).to_have_value("")
    send(alice, "still answering")
    wait_for_answer(alice, demo_echo("still answering"))


def test_switching_the_model_mid_chat_answers_the_next_turn_with_it(
    alice: Any, keys: dict[str, str]
) -> None:
    # ``keys`` made the fake upstream's endpoint: its model joins the demo's in the list.
    new_chat(alice, "Switch")
    send(alice, "first turn")
    wait_for_answer(alice, demo_echo("first turn"))
    wait_until_idle(alice, 1)
    alice.get_by_test_id("model-select").select_option(f"fake-upstream/{MODEL}")
    expect(alice.get_by_test_id("notice").last).to_contain_text(MODEL)
    send(alice, "second turn")
    wait_for_answer(alice, ECHO + "second turn")
    wait_until_idle(alice, 2)
    alice.reload()
    expect(alice.get_by_test_id("model-select")).to_have_value(f"fake-upstream/{MODEL}")
    expect(alice.locator("#transcript > .msg-assistant").first).to_contain_text("first turn")


def test_a_stopped_answer_can_be_continued_from_the_note_by_the_composer(alice: Any) -> None:
    said = "Please stop me so I can continue"
    full = demo_echo(said)
    new_chat(alice, "Continue")
    send(alice, said)
    wait_for_partial_answer(alice, full)
    alice.get_by_test_id("stop").click()
    wait_until_idle(alice, 1)
    note = alice.get_by_test_id("turn-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("stopped early")
    alice.reload()
    expect(alice.get_by_test_id("turn-note")).to_be_visible()
    alice.get_by_test_id("retry").click()
    expect(alice.locator("#transcript > .msg-assistant")).to_have_count(2)
    expect(alice.get_by_test_id("turn-note")).to_be_hidden()


def test_the_connection_state_sits_by_the_composer_and_jump_to_latest_returns(
    alice: Any, server: Any, screenshots: Path
) -> None:
    made = json.loads(server.shell(SEED_LONG_CHAT).strip().splitlines()[-1])
    alice.goto(f"/c/{made['id']}/")
    expect(alice.locator("#composer #connection")).to_have_attribute("data-state", "open")
    # It opens at its latest message.
    expect(alice.get_by_text("answer 129", exact=True)).to_be_in_viewport()
    jump = alice.get_by_test_id("jump-latest")
    expect(jump).to_be_hidden()
    alice.evaluate("window.scrollTo(0, 0)")
    expect(jump).to_be_visible()
    alice.screenshot(path=str(screenshots / "jump-latest.png"))
    jump.click()
    expect(alice.get_by_text("answer 129", exact=True)).to_be_in_viewport()
    expect(jump).to_be_hidden()


def test_a_message_sent_while_the_answer_streams_is_queued_then_sent_after(
    alice: Any, screenshots: Path
) -> None:
    said = "A first question that takes a while to answer"
    new_chat(alice, "Queue")
    send(alice, said)
    wait_for_partial_answer(alice, demo_echo(said))
    send(alice, "and a second one")
    box = alice.get_by_test_id("pending-box")
    expect(box).to_be_visible()
    expect(box).to_contain_text("and a second one")
    alice.screenshot(path=str(screenshots / "queued.png"), full_page=True)
    # The first answer ends; the queue starts the next run with the queued message.
    expect(alice.locator("#transcript > .msg-user")).to_have_count(2, timeout=30_000)
    expect(alice.locator("#transcript > .msg-user").last).to_contain_text("and a second one")
    expect(box).to_be_hidden()
    wait_until_idle(alice, 2)
    expect(alice.locator("#transcript > .msg-assistant")).to_have_count(2)


def test_a_queued_message_can_be_taken_back_into_the_composer(alice: Any) -> None:
    said = "Another slow question for the queue"
    new_chat(alice, "Take back")
    send(alice, said)
    wait_for_partial_answer(alice, demo_echo(said))
    send(alice, "on second thought")
    expect(alice.get_by_test_id("pending-box")).to_be_visible()
    alice.get_by_test_id("pending-edit").click()
    expect(alice.get_by_test_id("pending-box")).to_be_hidden()
    expect(alice.get_by_test_id("message-input")).to_have_value("on second thought")
    wait_until_idle(alice, 1)
    expect(alice.locator("#transcript > .msg-user")).to_have_count(1)
