"""The live chat in a real browser, against a real Daphne server and the offline demo model.

Every wait is on something the page shows (or on ``window.__answers``, the answer texts the
page showed, recorded by conftest's init script); there are no fixed sleeps.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

CHAT_URL = re.compile(r"/c/[0-9a-f-]{36}/$")
STOPPED_NOTE = "Stopped. What was written so far is kept."


def demo_echo(said: str) -> str:
    """The demo model's whole answer to ``said`` (agents/runtime/demo.py)."""
    return (
        f"You said: {said} — I am orkestrel's offline demo model, so I can only echo you. "
        "Ask me about your files to see a tool call, or point this profile at a real "
        "OpenAI-compatible, Anthropic or Ollama endpoint in the admin."
    )


def new_chat(page: Page, title: str = "") -> str:
    """Start a conversation on the demo profile from the list page; return its URL."""
    page.goto("/")
    page.get_by_test_id("profile-select").select_option(label="Demo (offline)")
    if title:
        page.get_by_label("Title", exact=True).fill(title)
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(CHAT_URL)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    return page.url


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("send").click()


def wait_until_idle(page: Page, user_messages: int) -> None:
    """Wait until ``user_messages`` sends were accepted and no reply is streaming any more."""
    page.wait_for_function(
        """(count) => {
            const accepted = document.querySelectorAll(
                "#transcript > .msg-user[data-message-id]:not(.is-pending)");
            const streaming = document.getElementById("chat").classList.contains("is-streaming");
            return accepted.length === count && !streaming;
        }""",
        arg=user_messages,
    )


def answer_text(page: Page) -> str:
    return page.get_by_test_id("answer").text_content().strip()


def wait_for_partial_answer(page: Page, full: str) -> str:
    """Wait until the answer shows some, but not all, of ``full``; return that text."""
    page.wait_for_function(
        """(full) => {
            const node = document.querySelector("[data-testid=answer]");
            const text = node ? node.textContent.trim() : "";
            return text.length > 0 && text.length < full.length;
        }""",
        arg=full,
    )
    return answer_text(page)


def shown_answers(page: Page) -> list[str]:
    return page.evaluate("window.__answers")


def wait_for_answer(page: Page, full: str) -> None:
    """Wait until the answer is exactly ``full`` (trimmed textContent, no normalization)."""
    page.wait_for_function(
        """(full) => {
            const node = document.querySelector("[data-testid=answer]");
            return node !== null && node.textContent.trim() === full;
        }""",
        arg=full,
    )


def no_horizontal_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_login_form_leads_to_the_list_and_the_profile_picker_starts_a_demo_chat(
    open_context: Any, passwords: dict[str, str]
) -> None:
    page = open_context().new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))

    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(passwords["alice"])
    page.get_by_test_id("login").click()
    expect(page.get_by_test_id("conversation-list")).to_be_visible()
    expect(page.get_by_role("heading", name="Your conversations")).to_be_visible()

    new_chat(page, title="First e2e chat")
    expect(page.locator("#chat-title")).to_have_text("First e2e chat")
    expect(page.locator(".chat-profile")).to_have_text("Agent: Demo (offline)")
    expect(page.locator("#transcript-empty")).to_be_visible()

    page.goto("/")
    rows = page.get_by_test_id("conversation-row")
    expect(rows.filter(has_text="First e2e chat")).to_have_count(1)
    page.get_by_test_id("logout").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    expect(page.get_by_test_id("login")).to_be_visible()


def test_answer_streams_with_thinking_and_ends_as_the_demo_echo(
    alice: Page, screenshots: Path
) -> None:
    said = "Hello from the browser test"
    full = demo_echo(said)
    new_chat(alice)
    send(alice, said)

    expect(alice.locator(".msg-user").first).to_have_text(re.compile(said))
    expect(alice.get_by_test_id("stop")).to_be_visible()
    wait_for_answer(alice, full)
    wait_until_idle(alice, 1)

    shown = shown_answers(alice)
    partials = {text for text in shown if text != full}
    assert len(partials) >= 2, f"the answer did not grow in steps: {shown}"
    assert all(full.startswith(text) for text in shown), shown
    assert shown[-1] == full
    thinking = alice.get_by_test_id("thinking")
    expect(thinking).to_have_count(1)
    expect(thinking).to_contain_text("A demo reply: echo the message and explain.")
    expect(alice.get_by_test_id("stop")).to_be_hidden()
    expect(alice.get_by_test_id("message-input")).to_be_enabled()
    alice.screenshot(path=str(screenshots / "chat-streamed-answer.png"), full_page=True)

    alice.reload()  # the committed transcript renders the same answer
    expect(alice.get_by_test_id("answer")).to_have_text(full)
    expect(alice.locator("#transcript > .msg-assistant")).to_have_count(1)


def test_usage_and_context_meter_count_tokens_after_a_reply(alice: Page) -> None:
    new_chat(alice)
    send(alice, "Count my tokens please")
    wait_for_answer(alice, demo_echo("Count my tokens please"))
    wait_until_idle(alice, 1)

    usage = alice.get_by_test_id("usage")
    # Usage frames come before `finish`: no long wait once the reply is done.
    expect(usage).not_to_have_attribute("data-total", "0", timeout=3_000)
    assert int(usage.get_attribute("data-total")) > 0
    expect(usage.locator(".usage-total")).not_to_have_text("0")
    meter = alice.get_by_test_id("context-meter")
    expect(meter).to_be_visible()
    assert int(meter.get_attribute("data-used")) > 0

    alice.reload()  # the total was stored with the conversation, not only shown
    assert int(alice.get_by_test_id("usage").get_attribute("data-total")) > 0


def test_question_about_files_shows_a_workspace_tool_card_then_the_answer(
    alice: Page, screenshots: Path
) -> None:
    new_chat(alice)
    send(alice, "Which files do I have?")

    card = alice.get_by_test_id("tool-card")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-tool-name", "workspace")
    expect(card.locator(".tool-name")).to_have_text("workspace")
    expect(card.locator(".tool-result")).to_have_count(1)  # its result arrived
    wait_until_idle(alice, 1)

    card.get_by_text("Arguments and result").click()
    expect(card.locator(".tool-args")).to_contain_text('"operation": "list"')
    expect(card.locator(".tool-result")).to_be_visible()
    expect(card.locator(".tool-result")).to_have_text("[]")
    expect(card.locator(".badge")).to_have_count(0)  # neither pending nor denied nor failed
    # The answer comes after the card, in the next assistant turn.
    expect(alice.get_by_test_id("answer")).to_have_text(
        "The workspace tool answered: [] That is what your workspace holds right now."
    )
    turns = alice.locator("#transcript > .msg-assistant")
    expect(turns).to_have_count(2)
    expect(turns.nth(0).get_by_test_id("tool-card")).to_have_count(1)
    expect(turns.nth(1).get_by_test_id("answer")).to_have_count(1)
    alice.screenshot(path=str(screenshots / "chat-tool-card.png"), full_page=True)

    alice.reload()  # the committed transcript keeps the card with its result
    expect(alice.get_by_test_id("tool-card").locator(".tool-result")).to_have_text("[]")


def test_stopping_keeps_the_partial_answer_also_after_a_reload(
    alice: Page, screenshots: Path
) -> None:
    said = "Please stop me halfway through"
    full = demo_echo(said)
    new_chat(alice)
    send(alice, said)
    wait_for_partial_answer(alice, full)

    alice.get_by_test_id("stop").click()
    expect(alice.locator(".run-note")).to_have_text(STOPPED_NOTE)
    wait_until_idle(alice, 1)
    expect(alice.get_by_test_id("stop")).to_be_hidden()
    kept = answer_text(alice)
    assert kept, "the partial answer vanished"
    assert full.startswith(kept) and len(kept) < len(full), kept
    assert all(full.startswith(text) for text in shown_answers(alice))
    alice.screenshot(path=str(screenshots / "chat-stopped.png"), full_page=True)

    alice.reload()
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    expect(alice.get_by_test_id("answer")).to_be_visible()
    assert answer_text(alice) == kept
    expect(alice.locator("#transcript > .msg-assistant")).to_have_count(1)
    expect(alice.get_by_test_id("stop")).to_be_hidden()


def test_reload_mid_answer_resumes_the_stream_without_duplicated_text(alice: Page) -> None:
    said = "Keep going while I reload the page"
    full = demo_echo(said)
    new_chat(alice)
    send(alice, said)
    before = wait_for_partial_answer(alice, full)

    alice.reload()
    wait_for_answer(alice, full)
    wait_until_idle(alice, 1)

    shown = shown_answers(alice)  # only what the reloaded page showed
    assert all(full.startswith(text) for text in shown), f"a partial was not a prefix: {shown}"
    resumed = [text for text in shown if text != full]
    assert resumed, f"the reloaded page never streamed; it showed only {shown}"
    assert len(resumed[0]) >= len(before), (before, resumed[0])
    expect(alice.locator("#transcript > .msg-user")).to_have_count(1)
    expect(alice.locator("#transcript > .msg-assistant")).to_have_count(1)
    assert answer_text(alice) == full


def test_enter_sends_and_shift_enter_adds_a_line_without_horizontal_scroll_at_360px(
    open_context: Any,
) -> None:
    page = open_context("alice", viewport={"width": 360, "height": 740}).new_page()
    page.goto("/")
    assert no_horizontal_scroll(page), "the conversation list scrolls sideways at 360 px"
    new_chat(page)
    assert no_horizontal_scroll(page), "the empty chat scrolls sideways at 360 px"

    # A long unbroken word too: it must wrap, not widen the page.
    second = "https://example.com/" + "averylongunbrokenpathsegment" * 4
    box = page.get_by_test_id("message-input")
    box.click()
    page.keyboard.type("first line")
    box.press("Shift+Enter")
    page.keyboard.insert_text(second)
    expect(box).to_have_value(f"first line\n{second}")
    expect(page.locator("#transcript > .msg-user")).to_have_count(0)  # nothing was sent

    box.press("Enter")
    expect(box).to_have_value("")
    user = page.locator("#transcript > .msg-user")
    expect(user).to_have_count(1)
    assert user.locator(".msg-body").text_content() == f"first line\n{second}"
    # pre-wrap: the newline is shown as a line break, not folded into a space.
    assert user.locator(".msg-body").inner_text().startswith("first line\nhttps://")

    expect(page.get_by_test_id("stop")).to_be_visible()
    assert no_horizontal_scroll(page), "the streaming chat scrolls sideways at 360 px"
    wait_until_idle(page, 1)
    expect(page.get_by_test_id("answer")).to_contain_text("You said: first line")
    assert no_horizontal_scroll(page), "the answered chat scrolls sideways at 360 px"


def test_uploaded_file_is_listed_and_the_workspace_tool_sees_it(alice: Page) -> None:
    new_chat(alice)
    files = alice.get_by_test_id("workspace-files")
    expect(files).to_contain_text("No files yet.")

    alice.get_by_test_id("upload-input").set_input_files(
        files=[{"name": "shopping.txt", "mimeType": "text/plain", "buffer": b"apples\npears\n"}]
    )
    expect(alice.locator("#upload-status")).to_have_text("Uploaded shopping.txt.")
    expect(files.locator(".file-button")).to_have_text(["shopping.txt"])
    files.get_by_role("button", name="shopping.txt").click()
    expect(alice.get_by_test_id("file-viewer")).to_have_text("apples\npears\n")

    send(alice, "what files are in my workspace")
    card = alice.get_by_test_id("tool-card")
    expect(card).to_have_attribute("data-tool-name", "workspace")
    expect(card.locator(".tool-result")).to_contain_text('"path": "shopping.txt"')
    wait_until_idle(alice, 1)
    card.get_by_text("Arguments and result").click()
    expect(card.locator(".tool-result")).to_be_visible()
    expect(alice.get_by_test_id("answer")).to_contain_text("shopping.txt")


def test_another_user_cannot_open_or_join_someone_elses_chat(open_context: Any) -> None:
    alice = open_context("alice").new_page()
    url = new_chat(alice, title="Alice private plans")
    path = url.removeprefix(alice.evaluate("location.origin"))

    bob = open_context("bob").new_page()
    response = bob.goto(path)
    assert response is not None and response.status == 404
    expect(bob.get_by_text("Alice private plans")).to_have_count(0)

    files = bob.request.get(f"{path}workspace/files/", headers={"Accept": "application/json"})
    assert files.status == 404

    bob.goto("/")
    expect(bob.get_by_test_id("conversation-list")).not_to_contain_text("Alice private plans")
    close_code = bob.evaluate(
        """(path) => new Promise((resolve) => {
            const socket = new WebSocket(`ws://${location.host}${path}`);
            socket.onclose = (event) => resolve(event.code);
        })""",
        f"/ws/conversations/{path.strip('/').split('/')[-1]}/",
    )
    assert close_code == 4403


def test_compacted_history_shows_a_notice_whose_originals_load_when_opened(
    alice: Page, screenshots: Path
) -> None:
    new_chat(alice)
    send(alice, "The first question, about tides")
    wait_until_idle(alice, 1)
    send(alice, "The second question, about waves")
    wait_until_idle(alice, 2)

    alice.locator(".compact-box > summary").click()
    alice.get_by_test_id("compact").click()
    notice = alice.get_by_test_id("compaction-notice")
    expect(notice).to_have_count(1)
    expect(notice.locator(".compaction-originals > summary")).to_have_text("Original messages (2)")

    # After a reload the state frame only counts the originals; opening them fetches them.
    alice.reload()
    # The state frame re-renders the transcript: a click before it would open a replaced node.
    expect(alice.locator("#transcript")).to_have_attribute("data-synced", "true")
    originals = alice.get_by_test_id("compaction-notice").locator(".compaction-originals")
    expect(originals.locator(".originals > li")).to_have_count(0)
    originals.locator("summary").click()
    expect(originals.locator(".originals > .msg-user")).to_have_text(
        re.compile("The first question, about tides")
    )
    expect(originals.locator(".originals > .msg-assistant")).to_have_count(1)
    alice.screenshot(path=str(screenshots / "chat-compaction-originals.png"), full_page=True)


SEED_LONG_CHAT = """
import json
from django.contrib.auth import get_user_model
from conversations.services import create_conversation
from conversations.stores import DjangoConversationStore
alice = get_user_model().objects.get(username="alice")
conversation = create_conversation(user=alice, title="A long chat")
store = DjangoConversationStore(owner=alice)
messages = []
for n in range(130):
    messages.append({"id": f"u{n}", "role": "user", "content": f"question {n}"})
    messages.append({"id": f"a{n}", "role": "assistant", "content": f"answer {n}"})
store.set_sync({"id": str(conversation.id), "sections": [], "messages": messages})
print(json.dumps({"id": str(conversation.id)}))
"""


def test_a_long_chat_opens_on_its_newest_messages_and_shows_the_earlier_ones_on_request(
    alice: Page, server: Any
) -> None:
    made = json.loads(server.shell(SEED_LONG_CHAT).strip().splitlines()[-1])
    alice.goto(f"/c/{made['id']}/")
    expect(alice.locator("#connection")).to_have_attribute("data-state", "open")
    # The socket's state frame re-renders the transcript: page back after it, not before.
    expect(alice.locator("#transcript")).to_have_attribute("data-synced", "true")
    earlier = alice.get_by_test_id("earlier")
    expect(earlier).to_have_text("Show 60 earlier messages")
    expect(alice.locator("#transcript > .msg-user")).to_have_count(100)
    expect(alice.get_by_text("question 0", exact=True)).to_have_count(0)

    earlier.get_by_role("button").click()
    expect(alice.get_by_text("question 0", exact=True)).to_be_visible()
    expect(alice.locator("#transcript > .msg-user")).to_have_count(130)
    expect(alice.get_by_test_id("earlier")).to_have_count(0)
    first = alice.locator("#transcript > .msg").first
    expect(first).to_contain_text("question 0")
