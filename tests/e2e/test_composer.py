"""The composer in a real browser: a pasted and a dropped image reach the model with the
message, and typing ``/`` suggests the operators' prompt templates (against the served app)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .openai_setup import marker
from .test_chat import CHAT_URL, new_chat, wait_until_idle
from .upstream import FakeUpstream

pytestmark = pytest.mark.e2e

# A 1×1 PNG and a 1×1 GIF, as base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
GIF = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

# The file as the browser hands it to the page, then the event a paste or a drop fires.
FILE = """
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type }));
"""
PASTE = f"""([b64, type, name]) => {{
  {FILE}
  const box = document.getElementById("message-input");
  const init = {{ clipboardData: data, bubbles: true, cancelable: true }};
  box.focus();
  box.dispatchEvent(new ClipboardEvent("paste", init));
}}"""
DROP = f"""([b64, type, name]) => {{
  {FILE}
  const zone = document.getElementById("composer");
  const init = {{ dataTransfer: data, bubbles: true, cancelable: true }};
  for (const kind of ["dragenter", "dragover", "drop"]) {{
    zone.dispatchEvent(new DragEvent(kind, init));
  }}
}}"""


def new_upstream_chat(page: Page, title: str) -> None:
    """Start a conversation on the fake upstream's profile (the ``keys`` fixture made it)."""
    page.goto("/")
    page.get_by_test_id("profile-select").select_option(label="Upstream agent")
    page.get_by_label("Title", exact=True).fill(title)
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(CHAT_URL)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")


def test_a_pasted_and_a_dropped_image_are_previewed_then_reach_the_model(
    alice: Page, keys: dict[str, str], upstream: FakeUpstream, screenshots: Path
) -> None:
    new_upstream_chat(alice, "Images")
    alice.evaluate(PASTE, [PNG, "image/png", "screenshot.png"])
    alice.evaluate(DROP, [GIF, "image/gif", "dot.gif"])
    previews = alice.get_by_test_id("attachment")
    expect(previews).to_have_count(2)
    expect(previews.first.locator("img")).to_have_attribute("src", f"data:image/png;base64,{PNG}")
    expect(previews.last).to_contain_text("dot.gif")
    word = marker()
    alice.get_by_test_id("message-input").fill(f"{word} what do these show?")
    alice.screenshot(path=str(screenshots / "composer-images.png"))
    alice.get_by_test_id("send").click()
    expect(alice.get_by_test_id("attachments")).to_be_hidden()
    wait_until_idle(alice, 1)
    sent = alice.locator("#transcript > .msg-user").last
    expect(sent).to_contain_text("2 images attached")
    (body,) = upstream.requests_mentioning(word)
    parts = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    assert [part["image_url"]["url"] for part in parts if part["type"] == "image_url"] == [
        f"data:image/png;base64,{PNG}",
        f"data:image/gif;base64,{GIF}",
    ]


CREATE_TEMPLATE = """
from agents.models import PromptTemplate
PromptTemplate.objects.get_or_create(name="e2e-brief", defaults={
    "description": "Ask for a one-line answer", "text": "Answer in one line: {{input}}"})
"""


def test_typing_a_slash_suggests_the_templates_and_the_keyboard_picks_one(
    alice: Page, server: Any, screenshots: Path
) -> None:
    server.shell(CREATE_TEMPLATE)
    new_chat(alice, "Templates")
    box = alice.get_by_test_id("message-input")
    menu = alice.get_by_test_id("slash-menu")
    options = menu.get_by_test_id("slash-option")
    box.fill("/")
    expect(menu).to_be_visible()
    expect(options.first).to_have_attribute("data-name", "compact")
    expect(options.first).to_have_attribute("aria-selected", "true")
    box.press("ArrowDown")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    box.press("Escape")
    expect(menu).to_be_hidden()
    box.press_sequentially("e2e")
    expect(options).to_have_count(1)
    expect(options.first).to_contain_text(re.compile(r"/e2e-brief\s*Ask for a one-line answer"))
    alice.screenshot(path=str(screenshots / "slash-menu.png"))
    box.press("Tab")
    expect(box).to_have_value("/e2e-brief ")
    expect(menu).to_be_hidden()
    box.press_sequentially("the plan")
    box.press("Enter")
    # The server expanded it: the stored message replaces the one typed.
    accepted = alice.locator("#transcript > .msg-user[data-message-id]:not(.is-pending)")
    expect(accepted).to_have_text(re.compile(r"Answer in one line: the plan"))
    expect(alice.get_by_test_id("answer")).to_contain_text("You said: Answer in one line: the plan")


def test_enter_in_an_empty_composer_continues_the_conversation_and_adds_no_message(
    open_context: Any,
) -> None:
    # Seed 004's blank send: exactly /continue, at the composer as at the server's doors.
    page = open_context("alice", viewport={"width": 1280, "height": 800}).new_page()
    new_chat(page, "Blank Enter")
    box = page.get_by_test_id("message-input")
    box.fill("hello")
    box.press("Enter")
    wait_until_idle(page, 1)
    expect(page.locator("#transcript > .msg-assistant")).to_have_count(1)
    box.fill("   ")
    box.press("Enter")
    expect(page.locator("#transcript > .msg-assistant")).to_have_count(2)
    wait_until_idle(page, 1)
    expect(page.locator("#transcript > .msg-user")).to_have_count(1)
    expect(box).to_have_value("")
