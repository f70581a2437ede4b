"""Markdown in the chat as a reader sees it, in a real browser: rendered while it streams,
code highlighted with its language and a copy button, math typeset, tables aligned, task
lists ticked, every message copyable as Markdown; no console error, no CSP violation."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .test_chat import demo_echo, new_chat, send, wait_until_idle
from .test_transcript import opened, seeded

pytestmark = pytest.mark.e2e

RICH = (
    "## Results\n\n"
    "```python\ndef add(a, b):\n    return a + b\n```\n\n"
    "| name | score |\n|:-----|------:|\n| ada | 10 |\n\n"
    "- [x] parsed\n- [ ] shipped\n\n"
    "Inline $a^2 + b^2 = c^2$ and a thin space $a\\,b$.\n\n"
    "$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$\n\n"
    "Within a line, $$e^{i\\pi} + 1 = 0$$ too.\n"
)


@pytest.fixture
def reader(open_context: Any) -> tuple[Page, list[str]]:
    """Alice's page with clipboard access; the console errors it logs."""
    context = open_context(
        "alice",
        viewport={"width": 1280, "height": 800},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    return page, errors


def test_markdown_is_rendered_while_the_answer_streams(reader: tuple[Page, list[str]]) -> None:
    page, errors = reader
    said = "this is **bold** and `code`"
    new_chat(page)
    send(page, said)
    shown = demo_echo(said).replace("**", "").replace("`", "")
    # Rendered, not raw, while the answer is still being written.
    page.wait_for_function(
        """(shown) => {
            const answer = document.querySelector("[data-testid=answer]");
            return answer !== null && answer.querySelector("strong")?.textContent === "bold"
                && !answer.textContent.includes("**")
                && answer.textContent.trim().length < shown.length;
        }""",
        arg=shown,
    )
    wait_until_idle(page, 1)
    answer = page.get_by_test_id("answer")
    expect(answer.locator("code")).to_have_text("code")
    expect(answer).to_have_text(shown)
    assert errors == []


def test_code_math_tables_and_task_lists_render_and_copy(
    reader: tuple[Page, list[str]], server: Any
) -> None:
    page, errors = reader
    url = seeded(
        server,
        "Rich",
        [
            {"id": "u", "role": "user", "content": "show me"},
            {"id": "a", "role": "assistant", "content": RICH},
        ],
    )
    opened(page, url)
    answer = page.get_by_test_id("answer")
    # Code: highlighted, labelled, copyable.
    block = answer.locator(".code-block")
    expect(block.locator(".code-lang")).to_have_text("python")
    expect(block.locator("code .hljs-keyword").first).to_have_text("def")
    block.get_by_test_id("code-copy").click()
    expect(block.get_by_test_id("code-copy")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == "def add(a, b):\n    return a + b\n"
    # Math: MathML with no TeX left showing, the thin space of `a\,b` kept as space.
    expect(answer.locator(".math math")).to_have_count(4)
    # ``$$…$$`` within a line is typeset whole: no stray dollar sign is left.
    assert "$" not in answer.inner_text()
    expect(answer.locator(".math-display math")).to_have_count(1)
    expect(answer.locator(".math").nth(1)).to_have_text("a\u2009b")
    assert "\\" not in answer.locator(".math").nth(2).text_content()
    # Table alignment through classes, applied by the stylesheet.
    expect(answer.locator("th").nth(1)).to_have_class("align-right")
    assert answer.locator("td").nth(1).evaluate("(cell) => getComputedStyle(cell).textAlign") == (
        "right"
    )
    # Task lists: disabled check boxes.
    boxes = answer.locator(".task-item input[type=checkbox]")
    expect(boxes).to_have_count(2)
    expect(boxes.nth(0)).to_be_checked()
    expect(boxes.nth(1)).not_to_be_checked()
    expect(boxes.nth(0)).to_be_disabled()
    # The whole message, as it was written.
    page.locator("#transcript > .msg-assistant").get_by_test_id("copy-message").click()
    assert page.evaluate("navigator.clipboard.readText()") == RICH
    # No style attribute anywhere in the transcript, and nothing logged an error.
    assert page.locator("#transcript [style]").count() == 0
    assert errors == [], errors
