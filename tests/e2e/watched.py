"""A page under test whose blocking axe violations, console errors and CSP violations are
recorded from its first script: what the accessibility tests of every page check."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from .axe import axe_violations

__all__ = ["CLEAN", "CSP_FLUSH", "CSP_RECORDER", "Watched"]

# Installed before a page's scripts: every CSP violation the page reports.
CSP_RECORDER = """
(() => {
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    window.__violations.push({
      directive: event.effectiveDirective, blocked: event.blockedURI, source: event.sourceFile,
    });
  }, true);
})();
"""
# A connection the policy refuses (nothing listens there either): once its violation is in,
# every earlier one is too.
CSP_FLUSH = "http://127.0.0.2:9/admin-pages-flush"
# What a page without problems shows.
CLEAN: dict[str, list[Any]] = {"axe": [], "console": [], "csp": []}


class Watched:
    """A page whose console errors and CSP violations are recorded from its first script."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(CSP_RECORDER)
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        if message.type == "error" and CSP_FLUSH not in message.text:
            self.console.append(message.text)

    def problems_at(self, path: str, ready: str) -> dict[str, list[Any]]:
        """Open ``path``, wait for ``ready`` (a selector); what axe, the console and the CSP
        found there."""
        response = self.page.goto(path)
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        expect(self.page.locator(ready).first).to_be_visible()
        self.page.wait_for_load_state("load")
        return self.problems()

    def problems(self) -> dict[str, list[Any]]:
        """What axe, the console and the policy found on the page as it is now (the console's
        errors are counted once)."""
        self.page.evaluate("(url) => { fetch(url).catch(() => {}); }", CSP_FLUSH)
        self.page.wait_for_function(
            "(url) => window.__violations.some((v) => v.blocked.startsWith(url))", arg=CSP_FLUSH
        )
        blocked = [
            v
            for v in self.page.evaluate("window.__violations")
            if not v["blocked"].startswith(CSP_FLUSH)
        ]
        found: dict[str, list[Any]] = {
            "axe": list(axe_violations(self.page)),
            "console": self.console,
            "csp": blocked,
        }
        self.console = []
        return found
