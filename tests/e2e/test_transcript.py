"""The transcript as the browser renders it from the page's embedded state (one renderer,
``static/orkestrel/render.js``, for the page load, the socket's ``state`` frame and live
frames): markdown sanitized, one answer, tool cards with results, failures and denials."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

# Run in ``manage.py shell``: a conversation of alice's holding ``MESSAGES`` (and the
# authority decisions ``DECISIONS``), printed as its id.
SEED = """
import json
from django.contrib.auth import get_user_model
from conversations.models import AuthorityDecision
from conversations.services import create_conversation
from conversations.stores import DjangoConversationStore
alice = get_user_model().objects.get(username="alice")
conversation = create_conversation(user=alice, title=ARGS["title"])
DjangoConversationStore(owner=alice).set_sync(
    {"id": str(conversation.id), "sections": [], "messages": ARGS["messages"]}
)
for decision in ARGS["decisions"]:
    AuthorityDecision.objects.create(conversation=conversation, **decision)
print(json.dumps({"id": str(conversation.id)}))
"""


def seeded(server: Any, title: str, messages: list[dict[str, Any]], decisions=()) -> str:
    """The chat URL of a new conversation of alice's holding ``messages``."""
    args = json.dumps({"title": title, "messages": messages, "decisions": list(decisions)})
    code = f"import json\nARGS = json.loads({json.dumps(args)})\n{SEED}"
    made = json.loads(server.shell(code).strip().splitlines()[-1])
    return f"/c/{made['id']}/"


def opened(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(page.locator("#transcript")).to_have_attribute("data-synced", "true")


def test_markdown_renders_and_html_in_messages_never_runs(alice: Page, server: Any) -> None:
    url = seeded(
        server,
        "Markdown",
        [
            {"id": "u", "role": "user", "content": "Hello <script>window.__x = 1</script>"},
            {
                "id": "a",
                "role": "assistant",
                "content": "This is **bold** and <img src=x onerror=window.__y=1>",
            },
        ],
    )
    opened(alice, url)
    transcript = alice.locator("#transcript")
    expect(transcript.locator("strong")).to_have_text("bold")
    expect(transcript.locator("script, img")).to_have_count(0)
    expect(transcript.locator(".msg-user")).to_contain_text("<script>window.__x = 1</script>")
    assert alice.evaluate("window.__x === undefined && window.__y === undefined")


def test_only_the_last_assistant_text_is_the_answer(alice: Page, server: Any) -> None:
    url = seeded(
        server,
        "Answers",
        [
            {"id": "u1", "role": "user", "content": "one"},
            {"id": "a1", "role": "assistant", "content": "first answer"},
            {"id": "u2", "role": "user", "content": "two"},
            {"id": "a2", "role": "assistant", "content": "second answer"},
        ],
    )
    opened(alice, url)
    expect(alice.get_by_test_id("answer")).to_have_count(1)
    expect(alice.get_by_test_id("answer")).to_have_text("second answer")


def test_tool_calls_render_as_cards_with_results_failures_and_denials(
    alice: Page, server: Any
) -> None:
    calls = [
        {"id": "c1", "name": "workspace", "arguments": {"op": "list"}},
        {"id": "c2", "name": "shell", "arguments": {"cmd": "rm -rf /"}},
        {"id": "c3", "name": "http_fetch", "arguments": {"url": "http://nowhere"}},
    ]
    url = seeded(
        server,
        "Tools",
        [
            {"id": "u", "role": "user", "content": "list, delete, fetch"},
            {"id": "a", "role": "assistant", "content": "", "calls": calls},
            {
                "id": "t1",
                "role": "tool",
                "content": '["a.txt"]',
                "tool_call_id": "c1",
                "outcome": {"kind": "value", "display": "--- a.txt\n+++ a.txt\n+new line"},
            },
            {
                "id": "t2",
                "role": "tool",
                "content": '"denied: destructive"',
                "tool_call_id": "c2",
                "outcome": {"kind": "denied", "reason": "destructive"},
            },
            {
                "id": "t3",
                "role": "tool",
                "content": '"connection refused"',
                "tool_call_id": "c3",
                "outcome": {"kind": "error"},
            },
        ],
        decisions=[
            {
                "tool_call_id": "c2",
                "tool_name": "shell",
                "arguments": {"cmd": "rm -rf /"},
                "rule_label": "no-shell",
                "zone": "deny",
                "allowed": False,
                "reason": "Shell commands are not allowed",
            }
        ],
    )
    opened(alice, url)
    cards = alice.get_by_test_id("tool-card")
    expect(cards).to_have_count(3)
    listed = alice.locator('.tool-card[data-call-id="c1"]')
    listed.locator("summary").click()
    expect(listed.locator(".tool-args")).to_contain_text('"op": "list"')
    expect(listed.locator(".tool-result")).to_contain_text("a.txt")
    expect(listed.locator(".tool-result.is-error")).to_have_count(0)
    expect(listed.get_by_test_id("tool-display")).to_contain_text("+new line")
    expect(alice.get_by_test_id("tool-display")).to_have_count(1)
    denied = alice.locator('.tool-card[data-call-id="c2"]')
    expect(denied.get_by_test_id("tool-denied")).to_have_count(1)
    expect(denied).to_contain_text("Shell commands are not allowed")
    expect(denied).to_contain_text("no-shell")
    failed = alice.locator('.tool-card[data-call-id="c3"]')
    expect(failed.get_by_test_id("tool-failed")).to_have_count(1)
    expect(failed.locator(".tool-result.is-error")).to_have_count(1)
    # A tool message is shown in its call's card, never as a message of its own.
    expect(alice.locator('#transcript [data-role="tool"]')).to_have_count(0)
