"""The model asks the user in a real browser: the question shows in view in the box where
approvals show, a choice answers it, free text answers the next one, and the run goes on with
the answer each time; the page stays clean (axe, console, CSP) with the question shown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Server
from .openai_setup import shell_json
from .test_chat import CHAT_URL, send, wait_until_idle
from .upstream import ASK_TRIGGER, TOOL_ANSWER
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

SETUP_CODE = """
from agents.models import AgentProfile, Tool
tool, _ = Tool.objects.get_or_create(name="ask_user", defaults={"kind": "builtin"})
profile, _ = AgentProfile.objects.get_or_create(
    slug="asking-agent",
    defaults={"name": "Asking agent", "model": "fake-upstream/fake-model", "limit": 4},
)
profile.tools.set([tool])
print(json.dumps(profile.pk))
"""


@pytest.fixture
def asking(server: Server, keys: dict[str, str]) -> None:
    """The ``Asking agent`` profile (``keys`` made the fake upstream's endpoint)."""
    shell_json(server, SETUP_CODE)


def test_a_question_is_answered_by_a_choice_then_by_free_text_and_the_run_goes_on(
    open_context: Callable[..., Any], asking: None, screenshots: Path
) -> None:
    watched = Watched(open_context("alice", viewport={"width": 1280, "height": 800}).new_page())
    page = watched.page
    page.goto("/")
    page.get_by_test_id("profile-select").select_option(label="Asking agent")
    page.get_by_label("Title", exact=True).fill("Ask me")
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(CHAT_URL)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")

    send(page, f"write it up, {ASK_TRIGGER}")
    box = page.get_by_test_id("approval-box")
    question = box.get_by_test_id("question")
    expect(question).to_be_in_viewport()
    expect(question.get_by_test_id("question-asked")).to_have_text("Which format?")
    expect(question.get_by_test_id("question-choice")).to_have_text(["PDF", "Markdown"])
    expect(question.get_by_test_id("question-choice").first).to_be_focused()
    expect(page.get_by_test_id("approval-announcer")).to_contain_text("Which format?")
    page.screenshot(path=str(screenshots / "question.png"), full_page=True)
    assert watched.problems() == CLEAN

    question.get_by_test_id("question-choice").filter(has_text="PDF").click()
    expect(box).to_be_hidden()
    answer = page.locator("#transcript > .msg-assistant").last
    expect(answer).to_contain_text(TOOL_ANSWER)
    expect(answer).to_contain_text('"answer": "PDF"')
    wait_until_idle(page, 1)

    send(page, f"once more, {ASK_TRIGGER}")
    expect(question).to_be_in_viewport()
    question.get_by_test_id("question-text").fill("Plain text, please")
    question.get_by_test_id("question-text").press("Enter")
    expect(box).to_be_hidden()
    expect(page.locator("#transcript > .msg-assistant").last).to_contain_text(
        '"answer": "Plain text, please"'
    )
    wait_until_idle(page, 2)
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(box).to_be_hidden()
