"""The API keys page sets a key's scopes and profiles: a read-only key made there reads, is
refused a write (403 ``scope``) and sees only its profile."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e


def call_api(url: str, key: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """GET (or POST ``body`` to) ``url`` with the key: the status and the JSON body."""
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_read_only_key_for_one_profile_is_made_shown_and_enforced(
    alice: Page, server: Any
) -> None:
    alice.goto("/settings/keys/")
    expect(alice.get_by_test_id("key-list")).not_to_have_attribute("aria-busy", "true")
    expect(alice.get_by_test_id("key-scope-read")).to_be_checked()
    expect(alice.get_by_test_id("key-scope-run")).to_be_checked()
    expect(alice.get_by_test_id("key-scope-keys")).not_to_be_checked()
    profile = alice.get_by_test_id("key-profile").first
    expect(profile).to_be_visible()
    slug = profile.get_attribute("value")
    alice.get_by_test_id("key-name").fill("reader")
    alice.get_by_test_id("key-scope-run").uncheck()
    profile.check()
    alice.get_by_test_id("create-key").click()
    shown = alice.get_by_test_id("new-key")
    expect(shown).to_have_text(re.compile(r"^ork_"))
    key = shown.text_content().strip()
    row = alice.get_by_test_id("key-row").filter(has_text="reader")
    expect(row.get_by_test_id("key-scopes")).to_have_text("read")
    expect(row.get_by_test_id("key-profile-list")).to_have_text(f"profiles: {slug}")
    expect(alice.get_by_test_id("key-scope-run")).to_be_checked()  # the form is reset

    status, body = call_api(f"{server.url}/api/profiles/", key)
    assert status == 200 and [item["slug"] for item in body["results"]] == [slug]
    status, body = call_api(f"{server.url}/api/conversations/", key, {"title": "no"})
    assert status == 403 and body["code"] == "scope"
