"""The conversation sidebar on the chat page (templates/conversations/_sidebar.html,
static/orkestrel/sidebar.js): new chat, rename, pin, archive, delete, search, export, import,
the keyboard and the phone drawer, in a real browser against the REST API."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .axe import axe_violations
from .conftest import Server

pytestmark = pytest.mark.e2e

CHAT_URL = re.compile(r"/c/[0-9a-f-]{36}/$")

MAKE = """
import json
from django.contrib.auth import get_user_model
from conversations.models import Message
from conversations.services import create_conversation
user = get_user_model().objects.get(username="alice")
made = create_conversation(user=user, title={title!r})
for position, (role, content) in enumerate({messages!r}):
    Message.objects.create(conversation=made, position=position, message_id=f"m{{position}}",
                           role=role, content=content)
print(json.dumps({{"id": str(made.pk)}}))
"""


def make(server: Server, title: str, messages: tuple[tuple[str, str], ...] = ()) -> str:
    """A conversation of alice's (through the ORM, in the server's database); its id."""
    out = server.shell(MAKE.format(title=title, messages=list(messages)))
    return json.loads(out.strip().splitlines()[-1])["id"]


def open_chat(page: Page, conversation: str) -> None:
    page.goto(f"/c/{conversation}/")
    expect(page.get_by_test_id("sidebar-lists").get_by_test_id("sidebar-row").first).to_be_visible()


def row(page: Page, title: str) -> Any:
    return page.get_by_test_id("sidebar-row").filter(
        has=page.get_by_role("link", name=title, exact=True)
    )


def act(page: Page, title: str, action: str) -> None:
    row(page, title).get_by_test_id("row-actions").click()
    row(page, title).get_by_test_id(f"row-{action}").click()


def test_new_chat_rename_pin_archive_and_delete_after_a_confirmation(alice: Page, server: Server):
    tag = uuid.uuid4().hex[:6]
    start = make(server, f"Start {tag}")
    open_chat(alice, start)
    alice.get_by_test_id("new-chat").click()
    expect(alice).not_to_have_url(re.compile(start))
    expect(alice).to_have_url(CHAT_URL)
    made = alice.url.rstrip("/").rsplit("/", 1)[1]
    current = alice.locator(f'.sidebar-row[data-id="{made}"] a[aria-current="page"]')
    expect(current).to_have_text("New conversation")
    today = alice.locator('[data-group="Today"]')
    expect(today.locator(f'.sidebar-row[data-id="{made}"]')).to_be_visible()

    row(alice, f"Start {tag}").get_by_test_id("row-actions").click()
    row(alice, f"Start {tag}").get_by_test_id("row-rename").click()
    alice.get_by_test_id("sidebar-rename").fill(f"Lisbon {tag}")
    alice.keyboard.press("Enter")
    expect(row(alice, f"Lisbon {tag}")).to_be_visible()
    expect(alice.get_by_role("link", name=f"Lisbon {tag}")).to_be_focused()

    act(alice, f"Lisbon {tag}", "pin")
    pinned = alice.locator('[data-group="Pinned"]')
    expect(pinned.get_by_role("link", name=f"Lisbon {tag}")).to_be_visible()
    alice.reload()
    expect(
        alice.locator('[data-group="Pinned"]').get_by_role("link", name=f"Lisbon {tag}")
    ).to_be_visible()

    act(alice, f"Lisbon {tag}", "archive")
    lists = alice.get_by_test_id("sidebar-lists")
    expect(lists.get_by_role("link", name=f"Lisbon {tag}")).to_have_count(0)
    alice.get_by_test_id("sidebar-archived-toggle").click()
    archived = alice.get_by_test_id("sidebar-archived")
    expect(archived.get_by_role("link", name=f"Lisbon {tag}")).to_be_visible()

    act(alice, f"Lisbon {tag}", "delete")
    dialog = alice.get_by_test_id("sidebar-confirm")
    expect(dialog).to_contain_text(f"Delete “Lisbon {tag}”?")
    dialog.get_by_test_id("confirm-cancel").click()
    expect(dialog).to_be_hidden()
    expect(archived.get_by_role("link", name=f"Lisbon {tag}")).to_be_visible()
    act(alice, f"Lisbon {tag}", "delete")
    dialog.get_by_test_id("confirm-delete").click()
    expect(archived.get_by_role("link", name=f"Lisbon {tag}")).to_have_count(0)
    alice.reload()
    alice.get_by_test_id("sidebar-archived-toggle").click()
    expect(alice.get_by_test_id("sidebar-archived")).to_be_visible()
    expect(alice.get_by_role("link", name=f"Lisbon {tag}")).to_have_count(0)
    assert alice.request.get(f"/api/conversations/{start}/").status == 404


def test_search_shows_the_match_highlighted_in_an_escaped_snippet(alice: Page, server: Server):
    tag = uuid.uuid4().hex[:6]
    found = make(
        server,
        f"Trip {tag}",
        (("user", "Where to?"), ("assistant", f"Take <b>tram {tag}</b> up to the castle.")),
    )
    open_chat(alice, found)
    alice.get_by_test_id("sidebar-search").fill(f"tram {tag}")
    results = alice.get_by_test_id("sidebar-results")
    snippet = results.get_by_test_id("sidebar-snippet")
    expect(snippet).to_have_text(f"Take <b>tram {tag}</b> up to the castle.")
    expect(snippet.locator("mark")).to_have_text(f"tram {tag}")
    expect(snippet.locator("b")).to_have_count(0)
    expect(alice.get_by_test_id("sidebar-status")).to_contain_text("1 found")
    alice.get_by_test_id("sidebar-search").press("Escape")
    expect(results).to_be_hidden()
    expect(alice.get_by_test_id("sidebar-lists")).to_be_visible()


def test_export_as_json_lines_and_markdown_then_import(alice: Page, server: Server, tmp_path: Path):
    tag = uuid.uuid4().hex[:6]
    source = make(
        server,
        f"Export {tag}",
        (("user", f"hello {tag}"), ("assistant", "**Hi** there")),
    )
    open_chat(alice, source)
    with alice.expect_download() as lines_download:
        act(alice, f"Export {tag}", "export-jsonl")
    assert lines_download.value.suggested_filename == f"export-{tag}.jsonl"
    lines = Path(lines_download.value.path()).read_text(encoding="utf-8")
    records = [json.loads(line) for line in lines.splitlines()]
    assert records[0]["type"] == "conversation" and records[0]["title"] == f"Export {tag}"
    assert [(r["role"], r["content"]) for r in records[1:]] == [
        ("user", f"hello {tag}"),
        ("assistant", "**Hi** there"),
    ]

    with alice.expect_download() as markdown_download:
        act(alice, f"Export {tag}", "export-markdown")
    assert markdown_download.value.suggested_filename == f"export-{tag}.md"
    markdown = Path(markdown_download.value.path()).read_text(encoding="utf-8")
    assert markdown == (
        f"# Export {tag}\n\n## You\n\nhello {tag}\n\n## Assistant\n\n**Hi** there\n"
    )

    upload = tmp_path / "again.jsonl"
    upload.write_text(lines.replace(f"Export {tag}", f"Imported {tag}"), encoding="utf-8")
    alice.get_by_test_id("sidebar-import-input").set_input_files(upload)
    expect(alice).not_to_have_url(re.compile(source))
    expect(alice).to_have_url(CHAT_URL)
    expect(alice.locator('.sidebar-link[aria-current="page"]')).to_have_text(f"Imported {tag}")
    expect(alice.get_by_test_id("answer").last).to_contain_text("Hi there")

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "message"}\n', encoding="utf-8")
    alice.get_by_test_id("sidebar-import-input").set_input_files(bad)
    expect(alice.get_by_test_id("sidebar-status")).to_contain_text(
        "Could not import bad.jsonl: the first record must be the conversation"
    )


def test_the_keyboard_reaches_search_and_walks_the_list(alice: Page, server: Server):
    tag = uuid.uuid4().hex[:6]
    older = make(server, f"Older {tag}")
    newer = make(server, f"Newer {tag}")
    open_chat(alice, older)
    alice.locator("body").press("Control+k")
    search = alice.get_by_test_id("sidebar-search")
    expect(search).to_be_focused()
    search.press("ArrowDown")
    links = alice.get_by_test_id("sidebar-lists").locator("a.sidebar-link")
    expect(links.first).to_be_focused()
    expect(links.first).to_have_attribute("href", f"/c/{newer}/")
    alice.keyboard.press("ArrowDown")
    expect(alice.locator(f'a.sidebar-link[href="/c/{older}/"]')).to_be_focused()
    outline = alice.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    alice.keyboard.press("Enter")
    expect(alice).to_have_url(re.compile(f"/c/{older}/$"))
    alice.locator("body").click(position={"x": 5, "y": 5})
    alice.keyboard.press("/")
    expect(alice.get_by_test_id("sidebar-search")).to_be_focused()


def test_the_sidebar_collapses_and_is_a_drawer_at_phone_width(open_context, server: Server):
    tag = uuid.uuid4().hex[:6]
    mine = make(server, f"Phone {tag}")
    wide = open_context("alice", viewport={"width": 1280, "height": 800}).new_page()
    wide.goto(f"/c/{mine}/")
    panel = wide.get_by_test_id("sidebar-panel")
    expect(panel).to_be_visible()
    expect(wide.locator('.sidebar-link[aria-current="page"]')).to_have_text(f"Phone {tag}")
    assert axe_violations(wide) == []
    wide.get_by_test_id("sidebar-toggle").click()
    expect(panel).to_be_hidden()
    wide.reload()
    expect(wide.get_by_test_id("sidebar-panel")).to_be_hidden()  # the choice is kept
    wide.get_by_test_id("sidebar-toggle").click()
    expect(wide.get_by_test_id("sidebar-panel")).to_be_visible()

    phone = open_context("alice", viewport={"width": 390, "height": 844}).new_page()
    phone.goto(f"/c/{mine}/")
    drawer = phone.get_by_test_id("sidebar-panel")
    expect(drawer).to_be_hidden()
    toggle = phone.get_by_test_id("sidebar-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(drawer).to_be_visible()
    expect(phone.get_by_test_id("sidebar-search")).to_be_focused()
    box = drawer.bounding_box()
    assert box is not None and box["x"] == 0 and box["width"] <= 390 * 0.85 + 1
    expect(phone.locator('.sidebar-link[aria-current="page"]')).to_be_in_viewport()
    assert axe_violations(phone) == []
    phone.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(toggle).to_be_focused()
    toggle.click()
    phone.get_by_test_id("sidebar-backdrop").click(position={"x": 380, "y": 400})
    expect(drawer).to_be_hidden()
