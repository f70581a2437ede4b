"""The Content-Security-Policy in a real browser: no page the site serves trips it.

Chromium reports each blocked script, style, image or connection as a
``securitypolicyviolation`` event and a console error. An init script records the events; once
a page is ready, a deliberate violation (a fetch to another origin) is the flush: violations
arrive in order, so when the deliberate one is in, every earlier one is too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import Server

pytestmark = pytest.mark.e2e

RECORDER = """
(() => {
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    window.__violations.push({
      directive: event.effectiveDirective,
      blocked: event.blockedURI,
      source: event.sourceFile,
      line: event.lineNumber,
    });
  }, true);
})();
"""
# A connection the policy refuses (nothing listens there either): the flush.
CONTROL = "http://127.0.0.2:9/csp-control"

OPERATOR_CODE = """
import json
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
user, _ = get_user_model().objects.get_or_create(
    username="csp-operator", defaults={"is_staff": True, "is_superuser": True}
)
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(json.dumps({"session": session.session_key, "id": user.pk}))
"""


class Watched:
    """A page whose CSP violations and console errors about the policy are recorded."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(RECORDER)
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        text = message.text
        if "Content Security Policy" in text and CONTROL not in text:
            self.console.append(text)

    def assert_clean(self, url: str, ready: Callable[[Page], None]) -> None:
        """Open ``url``, wait for ``ready``, flush the reports; fail on any violation."""
        response = self.page.goto(url)
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        assert "default-src 'self'" in response.headers["content-security-policy"]
        ready(self.page)
        self.page.evaluate("(url) => { fetch(url).catch(() => {}); }", CONTROL)
        self.page.wait_for_function(
            "(url) => window.__violations.some((v) => v.blocked.startsWith(url))", arg=CONTROL
        )
        found = [
            v
            for v in self.page.evaluate("window.__violations")
            if not v["blocked"].startswith(CONTROL)
        ]
        assert not found, f"CSP violations on {url}: {found}"
        assert not self.console, f"CSP console errors on {url}: {self.console}"


@pytest.fixture(scope="module")
def operator(server: Server) -> dict[str, Any]:
    """A staff account's session on the server, for the admin's pages."""
    return json.loads(server.shell(OPERATOR_CODE).strip().splitlines()[-1])


@pytest.fixture
def watch(open_context: Callable[..., Any], server: Server) -> Iterator[Callable[..., Watched]]:
    def make(user: str | None = None, session: str | None = None) -> Watched:
        context = open_context(user)
        if session is not None:
            context.add_cookies([{"name": server.cookie, "value": session, "url": server.url}])
        return Watched(context.new_page())

    yield make


def _heading(text: str) -> Callable[[Page], None]:
    return lambda page: expect(page.get_by_role("heading", name=text).first).to_be_visible()


def test_the_login_page_keeps_to_the_policy(watch):
    watch().assert_clean("/accounts/login/", _heading("Sign in"))


def test_the_chat_list_and_a_live_chat_keep_to_the_policy(watch):
    watched = watch("alice")
    page = watched.page
    watched.assert_clean(
        "/", lambda page: expect(page.get_by_test_id("new-conversation")).to_be_visible()
    )

    page.get_by_test_id("profile-select").select_option(label="Demo (offline)")
    page.get_by_test_id("new-conversation").click()
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    chat = page.url

    def answered(page: Page) -> None:
        # The websocket is open (connect-src), and a streamed, rendered answer arrives.
        expect(page.locator("#connection")).to_have_attribute("data-state", "open")
        page.get_by_test_id("message-input").fill("hello **there**")
        page.get_by_test_id("send").click()
        expect(page.get_by_test_id("answer").last).to_contain_text("offline demo model")

    watched.assert_clean(chat, answered)


def test_the_admin_keeps_to_the_policy(watch, operator):
    watched = watch(session=operator["session"])
    watched.assert_clean("/admin/", _heading("Site administration"))
    watched.assert_clean(
        "/admin/auth/user/", lambda page: expect(page.locator("#result_list")).to_be_visible()
    )
    watched.assert_clean(
        f"/admin/auth/user/{operator['id']}/change/",
        lambda page: expect(page.locator("#user_form")).to_be_visible(),
    )


def test_the_api_docs_keep_to_the_policy(watch):
    # Swagger UI ran its init script (nonce) and drew the schema it fetched.
    watch().assert_clean(
        "/api/docs/", lambda page: expect(page.locator(".swagger-ui .info .title")).to_be_visible()
    )
