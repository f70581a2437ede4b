"""Failures as people read them, in a real browser: one plain sentence in the status line under
the answer (updated in place, never a stack of banners), the technical text behind a disclosure,
and the failed or stopped answer keeps its mark after a reload. A compaction ends with its
outcome. The fake upstream breaks its stream mid-answer, or answers 500 to every try."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import Server
from .openai_setup import shell_json
from .test_chat import (
    STOPPED_NOTE,
    demo_echo,
    new_chat,
    send,
    wait_for_partial_answer,
    wait_until_idle,
)
from .test_composer import new_upstream_chat
from .upstream import CUT_TEXT, CUT_TRIGGER, FAIL_TRIGGER, MODEL, SECRET_DETAIL, FakeUpstream

pytestmark = pytest.mark.e2e

# A profile on the fake upstream whose endpoint retries a failed request twice.
RETRYING_CODE = """
from agents.models import AgentProfile, ProviderEndpoint
endpoint, _ = ProviderEndpoint.objects.get_or_create(
    name="retrying-upstream",
    defaults=dict(kind="openai", base_url=ARGS["url"], models=[ARGS["model"]], max_retries=2,
                  connect_timeout=5, read_timeout=30),
)
AgentProfile.objects.get_or_create(
    slug="retrying-agent",
    defaults=dict(name="Retrying agent", model=f"retrying-upstream/{ARGS['model']}", limit=4,
                  timeout=60),
)
print("{}")
"""


@pytest.fixture
def retrying(server: Server, keys: dict[str, str], upstream: FakeUpstream) -> None:
    shell_json(server, RETRYING_CODE, url=upstream.url, model=MODEL)


def assert_failure_shown(page: Page, sentence: str) -> None:
    """The status line says ``sentence`` plainly, with the detail folded and Retry; the
    answer carries the mark; nothing technical is in the sentence itself."""
    note = page.get_by_test_id("turn-note")
    expect(note).to_be_visible()
    expect(note).to_have_attribute("data-kind", "failed")
    text = note.get_by_test_id("turn-note-text")
    expect(text).to_have_text(f"The last answer failed: {sentence}")
    detail = note.get_by_test_id("turn-note-detail")
    expect(detail).to_be_visible()
    expect(detail.locator("pre")).to_be_hidden()  # folded until asked for
    expect(note.get_by_test_id("retry")).to_have_text("Retry")
    answer = page.locator("#transcript > .msg-assistant").last
    expect(answer).to_have_class(re.compile(r"\bis-failed\b"))
    expect(answer.get_by_test_id("run-note")).to_have_text(f"This answer failed: {sentence}")
    # One line, not banners: no notice repeats the failure.
    expect(page.get_by_test_id("notice")).to_have_count(0)


def test_a_stream_cut_mid_answer_reads_plainly_and_keeps_its_mark_after_a_reload(
    alice: Page, keys: dict[str, str]
) -> None:
    new_upstream_chat(alice, "Cut")
    send(alice, f"please answer {CUT_TRIGGER}")
    sentence = "the model server stopped answering mid-reply."
    assert_failure_shown(alice, sentence)
    # What streamed before the cut is kept, in the marked answer.
    answer = alice.locator("#transcript > .msg-assistant").last
    expect(answer.locator(".msg-body")).to_have_text(CUT_TEXT)
    # The technical text is one click away, never in the sentence.
    note = alice.get_by_test_id("turn-note")
    note.get_by_test_id("turn-note-detail").locator("summary").click()
    expect(note.locator(".turn-note-detail-text")).to_contain_text("mid-stream")
    assert "Error" not in (note.get_by_test_id("turn-note-text").text_content() or "")

    alice.reload()
    expect(alice.locator("#transcript")).to_have_attribute("data-synced", "true")
    assert_failure_shown(alice, sentence)
    expect(alice.locator("#transcript > .msg-assistant").last.locator(".msg-body")).to_have_text(
        CUT_TEXT
    )


def test_retries_are_told_in_place_and_counted_in_the_failure(alice: Page, retrying: None) -> None:
    alice.goto("/")
    alice.get_by_test_id("profile-select").select_option(label="Retrying agent")
    alice.get_by_label("Title", exact=True).fill("Retries")
    alice.get_by_test_id("new-conversation").click()
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    send(alice, f"please answer {FAIL_TRIGGER}")
    note = alice.get_by_test_id("turn-note")
    # While it retries, the one line says so (and is replaced, not stacked).
    expect(note).to_have_attribute("data-kind", "retrying")
    expect(note.get_by_test_id("turn-note-text")).to_contain_text("trying again")
    assert_failure_shown(alice, "the model server had an internal error; retried twice.")
    expect(alice.get_by_test_id("turn-note")).to_have_count(1)
    # The server's own words never reach the page.
    assert SECRET_DETAIL not in alice.content()
    # After a reload the count of retries is not known; the failure still reads plainly.
    alice.reload()
    expect(alice.locator("#transcript")).to_have_attribute("data-synced", "true")
    assert_failure_shown(alice, "the model server had an internal error.")


def test_a_stopped_answer_keeps_its_mark_after_a_reload(alice: Page) -> None:
    said = "Please stop me so the mark stays"
    new_chat(alice, "Stopped mark")
    send(alice, said)
    wait_for_partial_answer(alice, demo_echo(said))
    alice.keyboard.press("Escape")  # Esc stops, wherever the focus is
    wait_until_idle(alice, 1)
    answer = alice.locator("#transcript > .msg-assistant").last
    expect(answer.get_by_test_id("run-note")).to_have_text(STOPPED_NOTE)
    alice.reload()
    expect(alice.locator("#transcript")).to_have_attribute("data-synced", "true")
    answer = alice.locator("#transcript > .msg-assistant").last
    expect(answer).to_have_class(re.compile(r"\bis-stopped\b"))
    expect(answer.get_by_test_id("run-note")).to_have_text(STOPPED_NOTE)
    expect(alice.get_by_test_id("turn-note")).to_have_attribute("data-kind", "stopped")


def test_compaction_ends_with_its_outcome(alice: Page) -> None:
    new_chat(alice, "Compaction outcome")
    note = alice.get_by_test_id("turn-note")
    # Nothing to fold yet: the line says so instead of "requested…" forever.
    send(alice, "/compact")
    expect(note).to_have_attribute("data-kind", "not-compacted")
    expect(note.get_by_test_id("turn-note-text")).to_have_text(
        "Nothing to compact yet: the history is still short enough."
    )
    for index in range(3):
        send(alice, f"message number {index}")
        wait_until_idle(alice, index + 1)
    alice.locator(".compact-box > summary").click()
    alice.get_by_test_id("compact").click()
    expect(note).to_have_attribute("data-kind", "compacted")
    expect(note.get_by_test_id("turn-note-text")).to_contain_text("History compacted")
    expect(alice.get_by_test_id("compaction-notice")).to_have_count(1)
