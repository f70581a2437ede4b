"""A PDF attached in the chat (the Attach button's picker) is previewed, sent, shown in the
transcript (name, pages, the first page's text) and read by the model as its text; the page
stays free of accessibility, console and CSP problems."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF
from playwright.sync_api import Page, expect

from .openai_setup import marker
from .test_chat import wait_until_idle
from .test_composer import new_upstream_chat
from .upstream import FakeUpstream
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e


def _pdf() -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Field report: the bridge inspection passed.")
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")  # a "scanned" page: ink, no text
    return bytes(pdf.output())


def test_a_pdf_attached_in_the_chat_is_shown_in_the_transcript_and_read_by_the_model(
    alice: Page, keys: dict[str, str], upstream: FakeUpstream, screenshots: Path
) -> None:
    watched = Watched(alice)
    new_upstream_chat(alice, "Documents")
    alice.get_by_test_id("attach-input").set_input_files(
        {"name": "report.pdf", "mimeType": "application/pdf", "buffer": _pdf()}
    )
    preview = alice.get_by_test_id("attachment")
    expect(preview).to_have_count(1)
    expect(preview).to_contain_text("report.pdf")
    word = marker()
    alice.get_by_test_id("message-input").fill(f"{word} what does it say?")
    alice.get_by_test_id("send").click()
    expect(alice.get_by_test_id("attachments")).to_be_hidden()
    wait_until_idle(alice, 1)

    shown = alice.locator("#transcript > .msg-user").last.get_by_test_id("message-document")
    expect(shown).to_contain_text("report.pdf")
    expect(shown).to_contain_text("PDF · 2 pages")
    expect(shown).to_contain_text("Field report: the bridge inspection passed.")
    alice.screenshot(path=str(screenshots / "chat-document.png"))
    # After a reload, from the stored message.
    alice.reload()
    expect(
        alice.locator("#transcript > .msg-user").last.get_by_test_id("message-document")
    ).to_contain_text("2 pages")
    assert watched.problems() == CLEAN

    (body,) = upstream.requests_mentioning(word)
    parts = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    text = "".join(part.get("text", "") for part in parts)
    assert '<document name="report.pdf" type="application/pdf" pages=2>' in text
    assert "the bridge inspection passed." in text
    assert "page 2 has no extractable text" in text
