"""The API keys page in a real browser: create a key (shown once, copyable), use it, revoke it.

The page talks to ``/api/keys/`` with the session; the key is then used from outside the
browser, over HTTP with ``Authorization: Bearer``, as a program would.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

KEY_SHAPE = re.compile(r"^ork_([a-z0-9]{8})_[A-Za-z0-9_-]{40,}$")


def call_api(url: str, key: str) -> tuple[int, Any]:
    """GET ``url`` with ``Authorization: Bearer <key>``: the status and the JSON body."""
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {key}", "Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def log_in_to_the_keys_page(page: Page, passwords: dict[str, str]) -> None:
    page.goto("/settings/keys/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill(passwords["bob"])
    page.get_by_test_id("login").click()
    expect(page).to_have_url(re.compile(r"/settings/keys/$"))
    expect(page.get_by_role("heading", name="API keys")).to_be_visible()


def test_a_key_is_shown_once_copied_listed_used_and_revoked(
    open_context: Any, server: Any, passwords: dict[str, str], screenshots: Path
) -> None:
    context = open_context(
        viewport={"width": 1280, "height": 800},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    log_in_to_the_keys_page(page, passwords)
    rows = page.get_by_test_id("key-row")
    expect(page.get_by_test_id("key-list")).not_to_have_attribute("aria-busy", "true")
    before = rows.count()

    page.get_by_test_id("key-name").fill("e2e script")
    page.get_by_test_id("create-key").click()
    shown = page.get_by_test_id("new-key")
    expect(shown).to_have_text(KEY_SHAPE)
    key = shown.text_content().strip()
    prefix = KEY_SHAPE.match(key)[1]
    expect(page.get_by_test_id("new-key-box")).to_contain_text("shown only this once")
    expect(rows).to_have_count(before + 1)
    row = rows.filter(has_text="e2e script")
    expect(row.get_by_test_id("key-prefix")).to_have_text(f"ork_{prefix}_…")
    expect(row.get_by_test_id("key-status")).to_have_text("Active")

    copy = page.get_by_test_id("copy-key")
    expect(copy).to_be_visible()
    copy.click()
    expect(page.get_by_test_id("copy-status")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == key
    page.screenshot(path=str(screenshots / "keys-created.png"), full_page=True)

    status, body = call_api(f"{server.url}/api/keys/", key)
    assert status == 200
    assert "e2e script" in [item["name"] for item in body["results"]]

    page.reload()
    expect(rows.filter(has_text="e2e script")).to_have_count(1)
    expect(page.get_by_test_id("new-key-box")).to_be_hidden()
    assert key not in page.content()
    row = rows.filter(has_text="e2e script")
    expect(row.get_by_test_id("key-prefix")).to_have_text(f"ork_{prefix}_…")
    expect(row).to_contain_text("last used")

    row.get_by_test_id("revoke-key").click()
    row.get_by_test_id("confirm-revoke").click()
    revoked = rows.filter(has_text="e2e script")
    expect(revoked.get_by_test_id("key-status")).to_contain_text("Revoked")
    expect(revoked).to_have_attribute("data-status", "revoked")
    expect(revoked.get_by_test_id("confirm-revoke")).to_have_count(0)
    page.screenshot(path=str(screenshots / "keys-revoked.png"), full_page=True)

    assert call_api(f"{server.url}/api/keys/", key) == (
        401,
        {
            "type": "about:blank",
            "title": "Unauthorized",
            "status": 401,
            "detail": "Invalid API key.",
            "code": "invalid_api_key",
        },
    )
    page.reload()
    expect(rows.filter(has_text="e2e script").get_by_test_id("key-status")).to_contain_text(
        "Revoked"
    )


def test_an_invalid_name_is_reported_and_creates_nothing(alice: Page) -> None:
    alice.goto("/settings/keys/")
    expect(alice.get_by_test_id("key-list")).not_to_have_attribute("aria-busy", "true")
    rows = alice.get_by_test_id("key-row")
    before = rows.count()
    # Past the field's maxlength, as a script could send: the server refuses it.
    alice.get_by_test_id("key-name").evaluate("(input) => input.removeAttribute('maxlength')")
    alice.get_by_test_id("key-name").fill("x" * 101)
    alice.get_by_test_id("create-key").click()
    expect(alice.get_by_test_id("key-errors")).to_contain_text("Name:")
    expect(alice.get_by_test_id("new-key-box")).to_be_hidden()
    expect(rows).to_have_count(before)
