"""axe-core on the pages people use, in both themes: the login page, the conversation list and
a chat with a rich transcript (code, math, a table, tool cards, a failed answer, a call waiting
for approval) show no serious or critical violation, no console error and no CSP violation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from .test_approvals import careful, open_careful_chat  # noqa: F401 (a fixture)
from .test_chat import send, wait_until_idle
from .upstream import CUT_TRIGGER, WRITE_TRIGGER
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

THEMES = ("light", "dark")
RICH = (
    "a table, code and math:\n\n"
    "| name | score |\n|:-----|------:|\n| ada | 10 |\n\n"
    "```python\ndef add(a, b):\n    return a + b  # the sum\n```\n\n"
    "- [x] parsed\n- [ ] shipped\n\n"
    "Inline $a^2 + b^2 = c^2$ and $$\\int_0^1 x\\,dx = \\frac{1}{2}$$\n"
)


def themed(open_context: Callable[..., Any], theme: str, user: str | None = "alice") -> Watched:
    """A page in ``theme`` (chosen as the theme switch keeps it), its system in the other."""
    context = open_context(
        user,
        viewport={"width": 1280, "height": 800},
        color_scheme="dark" if theme == "light" else "light",
    )
    # (A document without storage, such as a full-size image, throws: nothing to set there.)
    context.add_init_script(
        f"try {{ localStorage.setItem('orkestrel-theme', '{theme}'); }} catch {{}}"
    )
    return Watched(context.new_page())


@pytest.mark.parametrize("theme", THEMES)
def test_the_login_page_and_the_list_pass_axe_in_each_theme(
    open_context: Callable[..., Any], theme: str
) -> None:
    visitor = themed(open_context, theme, user=None)
    visitor.page.goto("/accounts/login/")
    expect(visitor.page.locator("html")).to_have_attribute("data-theme", theme)
    expect(visitor.page.get_by_test_id("login")).to_be_visible()
    assert visitor.problems() == CLEAN

    alice = themed(open_context, theme)
    alice.page.goto("/")
    expect(alice.page.get_by_test_id("new-conversation")).to_be_visible()
    assert alice.problems() == CLEAN


@pytest.mark.usefixtures("careful")
def test_a_rich_chat_passes_axe_in_both_themes(
    open_context: Callable[..., Any], screenshots: Any
) -> None:
    checked = themed(open_context, "light")
    page = checked.page
    open_careful_chat(page, "Rich and accessible")
    send(page, RICH)
    wait_until_idle(page, 1)
    expect(page.locator("#transcript .code-block .hljs-keyword").first).to_be_visible()
    expect(page.locator("#transcript .math math").first).to_be_attached()
    send(page, f"then {CUT_TRIGGER}")
    expect(page.get_by_test_id("turn-note")).to_have_attribute("data-kind", "failed")
    wait_until_idle(page, 2)
    send(page, f"and {WRITE_TRIGGER}")
    expect(page.get_by_test_id("approval")).to_have_count(1)
    expect(page.get_by_test_id("tool-card")).to_have_count(1)
    wait_until_idle(page, 3)
    expect(page.locator("#transcript .is-failed")).to_have_count(1)
    page.wait_for_load_state("load")
    assert checked.problems() == CLEAN
    page.screenshot(path=str(screenshots / "chat-rich-light.png"), full_page=True)

    page.get_by_test_id("theme-select").select_option("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert checked.problems() == CLEAN
    page.screenshot(path=str(screenshots / "chat-rich-dark.png"), full_page=True)
