"""An answer's thinking reads the same after a reload as it did live: the collapsed block, its
text and "Thought for N s" (the demo model thinks before it answers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .test_chat import demo_echo, new_chat, send, wait_for_partial_answer, wait_until_idle

pytestmark = pytest.mark.e2e

THOUGHT = "A demo reply: echo the message and explain."
LABEL = re.compile(r"^Thought for \d+(\.\d)? s$")


def test_a_reload_shows_the_same_thinking_block_with_its_duration(
    alice: Page, screenshots: Path
) -> None:
    said = "Think before you answer"
    new_chat(alice)
    send(alice, said)
    # The answer is streaming: its thinking block ended and says how long it took.
    wait_for_partial_answer(alice, demo_echo(said))
    block = alice.get_by_test_id("thinking")
    expect(block.locator("summary")).to_have_text(LABEL)
    live_label = block.locator("summary").text_content()
    wait_until_idle(alice, 1)
    expect(block).to_have_count(1)
    expect(block.locator("summary")).to_have_text(live_label)
    block.locator("summary").click()
    expect(block.locator(".thinking-body")).to_have_text(THOUGHT)
    alice.screenshot(path=str(screenshots / "chat-thinking-live.png"), full_page=True)

    alice.reload()
    expect(alice.get_by_test_id("answer")).to_have_text(demo_echo(said))
    stored = alice.get_by_test_id("thinking")
    expect(stored).to_have_count(1)
    expect(stored).not_to_have_attribute("open", "")  # collapsed, as it was live
    expect(stored.locator("summary")).to_have_text(live_label)
    stored.locator("summary").click()
    expect(stored.locator(".thinking-body")).to_have_text(THOUGHT)
    # Above the answer, inside the same assistant message.
    turn = alice.locator("#transcript > .msg-assistant")
    expect(turn).to_have_count(1)
    expect(turn.locator(":scope > .thinking + .msg-body")).to_have_count(1)
    alice.screenshot(path=str(screenshots / "chat-thinking-reloaded.png"), full_page=True)
