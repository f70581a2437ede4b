"""The chat by keyboard and at phone width, in a real browser: the composer has the focus on
open, Esc stops an answer, Up in the empty composer edits the last message, focus is visible;
at 390 px the header is one line, the workspace is a drawer, "Jump to latest" is never under
the composer; the theme switch persists across a reload; a sent image shows as a thumbnail that
opens full size."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .test_chat import (
    SEED_LONG_CHAT,
    STOPPED_NOTE,
    demo_echo,
    new_chat,
    send,
    wait_for_answer,
    wait_for_partial_answer,
    wait_until_idle,
)
from .test_composer import PASTE, PNG, new_upstream_chat

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}


def focused_testid(page: Page) -> str | None:
    return page.evaluate("document.activeElement?.dataset.testid ?? null")


def test_the_composer_has_the_focus_when_a_chat_opens(alice: Page) -> None:
    url = new_chat(alice, "Focus")
    expect(alice.get_by_test_id("message-input")).to_be_focused()
    alice.goto("/")
    alice.goto(url)
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    expect(alice.get_by_test_id("message-input")).to_be_focused()


def test_escape_stops_the_answer_being_written(alice: Page) -> None:
    said = "Please let Escape stop me"
    new_chat(alice, "Escape")
    send(alice, said)
    wait_for_partial_answer(alice, demo_echo(said))
    alice.get_by_test_id("message-input").press("Escape")
    expect(alice.locator(".run-note")).to_have_text(STOPPED_NOTE)
    wait_until_idle(alice, 1)
    expect(alice.get_by_test_id("stop")).to_be_hidden()


def test_up_in_the_empty_composer_edits_the_last_message(alice: Page) -> None:
    new_chat(alice, "Up edits")
    for said in ("the first message", "the second message"):
        send(alice, said)
        wait_for_answer(alice, demo_echo(said))
        wait_until_idle(alice, 1 if said == "the first message" else 2)
    box = alice.get_by_test_id("message-input")
    box.fill("not empty")
    box.press("ArrowUp")
    expect(alice.get_by_test_id("editor")).to_have_count(0)  # only an empty box edits
    box.fill("")
    box.press("ArrowUp")
    editor = alice.get_by_test_id("edit-input")
    expect(editor).to_have_count(1)
    expect(editor).to_be_focused()
    expect(editor).to_have_value("the second message")
    last = alice.locator("#transcript > .msg-user").last
    expect(last.get_by_test_id("editor")).to_have_count(1)
    # Escape closes it and gives the composer the focus back; the answer is not stopped.
    editor.press("Escape")
    expect(alice.get_by_test_id("editor")).to_have_count(0)
    expect(box).to_be_focused()
    # Up again, then Enter sends the edit: a second alternative answers it.
    box.press("ArrowUp")
    editor.fill("the second message, edited")
    editor.press("Enter")
    expect(last.get_by_test_id("branch-count")).to_have_text("2/2")
    wait_for_answer(alice, demo_echo("the second message, edited"))


def test_focus_is_visible_on_the_message_actions(alice: Page) -> None:
    new_chat(alice, "Visible focus")
    send(alice, "show me the focus")
    wait_until_idle(alice, 1)
    copy = alice.locator("#transcript > .msg-user").get_by_test_id("copy-message")
    copy.focus()
    alice.keyboard.press("Shift+Tab")
    alice.keyboard.press("Tab")  # a keyboard focus: :focus-visible applies
    expect(copy).to_be_focused()
    outline = copy.evaluate(
        "(node) => { const s = getComputedStyle(node); return [s.outlineStyle, s.outlineWidth]; }"
    )
    assert outline[0] != "none" and float(outline[1].removesuffix("px")) >= 2, outline
    box = copy.bounding_box()
    assert box is not None and box["height"] >= 24, box


def test_at_390px_the_header_is_one_line_and_the_workspace_a_drawer(
    open_context: Any, server: Any, screenshots: Any
) -> None:
    page = open_context("alice", viewport=PHONE).new_page()
    made = json.loads(server.shell(SEED_LONG_CHAT).strip().splitlines()[-1])
    page.goto(f"/c/{made['id']}/")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    # One line each: the site's header and the chat's title row.
    for selector in (".site-header", ".chat-title-row"):
        height = page.locator(selector).evaluate("(node) => node.getBoundingClientRect().height")
        assert height < 56, f"{selector} is {height}px tall"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # The site's links are behind the menu.
    links = page.get_by_test_id("keys-link")
    expect(links).to_be_hidden()
    page.get_by_test_id("menu-toggle").click()
    expect(links).to_be_visible()
    page.keyboard.press("Escape")
    expect(links).to_be_hidden()
    # The workspace is a drawer: closed, then over the chat, then closed by Escape.
    files = page.get_by_test_id("workspace-files")
    expect(files).to_be_hidden()
    toggle = page.get_by_test_id("workspace-toggle")
    toggle.click()
    expect(files).to_be_in_viewport()
    expect(page.get_by_test_id("workspace-close")).to_be_focused()
    page.screenshot(path=str(screenshots / "chat-390-drawer.png"))
    page.keyboard.press("Escape")
    expect(files).to_be_hidden()
    expect(toggle).to_be_focused()
    # "Jump to latest" shows above the composer, not under it.
    page.evaluate("window.scrollTo(0, 0)")
    jump = page.get_by_test_id("jump-latest")
    expect(jump).to_be_visible()
    on_top = jump.evaluate(
        """(button) => {
            const box = button.getBoundingClientRect();
            const hit = document.elementFromPoint(box.left + box.width / 2, box.top + 2);
            return box.bottom <= window.innerHeight && (hit === button || button.contains(hit));
        }"""
    )
    assert on_top, "Jump to latest is clipped or covered"
    page.screenshot(path=str(screenshots / "chat-390.png"))
    jump.click()
    expect(page.get_by_text("answer 129", exact=True)).to_be_in_viewport()


def test_the_theme_choice_persists_across_a_reload(open_context: Any) -> None:
    page = open_context("alice", viewport={"width": 1280, "height": 800}, color_scheme="light")
    page = page.new_page()
    new_chat(page, "Theme")
    background = "getComputedStyle(document.body).backgroundColor"
    light = page.evaluate(background)
    page.get_by_test_id("theme-select").select_option("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    dark = page.evaluate(background)
    assert dark != light
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.get_by_test_id("theme-select")).to_have_value("dark")
    assert page.evaluate(background) == dark
    # Other pages too (the list).
    page.goto("/")
    assert page.evaluate(background) == dark
    # "System" follows the system again: light here.
    page.get_by_test_id("theme-select").select_option("system")
    expect(page.locator("html")).not_to_have_attribute("data-theme", "dark")
    page.reload()
    assert page.evaluate(background) == light


def test_a_sent_image_is_a_thumbnail_that_opens_full_size(
    alice: Page, keys: dict[str, str]
) -> None:
    new_upstream_chat(alice, "Thumbnails")
    alice.evaluate(PASTE, [PNG, "image/png", "dot.png"])
    alice.get_by_test_id("message-input").fill("what is this picture?")
    alice.get_by_test_id("send").click()
    wait_until_idle(alice, 1)
    sent = alice.locator("#transcript > .msg-user").last
    thumbnail = sent.get_by_test_id("message-image")
    expect(thumbnail).to_have_count(1)
    image = thumbnail.locator("img")
    expect(image).to_have_attribute("alt", "Image 1 of 1 (opens full size)")
    alice.wait_for_function(
        "(img) => img.complete && img.naturalWidth === 1", arg=image.element_handle()
    )
    expect(sent).to_contain_text("1 image attached")
    with alice.context.expect_page() as opened:
        thumbnail.click()
    full = opened.value
    full.wait_for_load_state()
    assert full.url == alice.url.split("/c/")[0] + str(thumbnail.get_attribute("href"))
    assert full.evaluate("document.contentType") == "image/png"
    # Still there after a reload (built from the stored message).
    alice.reload()
    sent = alice.locator("#transcript > .msg-user").last
    expect(sent.get_by_test_id("message-image")).to_have_count(1)
