"""The chat page: the committed transcript rendered on the server, sanitized, with sections."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from conversations.models import AuthorityDecision, Conversation, Section

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(alice, default_profile):
    return Conversation.objects.create(owner=alice, title="Chat", profile=default_profile)


def chat(client, conversation) -> str:
    response = client.get(reverse("conversations:chat", args=[conversation.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_transcript_renders_markdown_and_escapes_html(alice_client, conversation, add_message):
    add_message(conversation, "user", "Hello <script>alert('x')</script>")
    add_message(conversation, "assistant", "This is **bold** and <img src=x onerror=alert(1)>")
    page = chat(alice_client, conversation)
    assert "<strong>bold</strong>" in page
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(" in page
    assert "<img src=x" not in page and '<img src="x"' not in page


def test_the_last_assistant_text_is_the_only_answer(alice_client, conversation, add_message):
    add_message(conversation, "user", "one")
    add_message(conversation, "assistant", "first answer")
    add_message(conversation, "user", "two")
    add_message(conversation, "assistant", "second answer")
    page = chat(alice_client, conversation)
    assert page.count('data-testid="answer"') == 1
    answer = re.search(r'data-testid="answer">(.*?)</div>', page, re.S)
    assert answer and "second answer" in answer.group(1)


def test_page_has_the_stable_test_ids_and_accessible_controls(alice_client, conversation):
    page = chat(alice_client, conversation)
    for test_id in (
        "message-input",
        "send",
        "stop",
        "usage",
        "context-meter",
        "workspace-files",
        "upload-input",
    ):
        assert f'data-testid="{test_id}"' in page, test_id
    assert '<label for="message-input"' in page
    assert '<label for="upload-input"' in page
    # The Stop button exists but stays hidden until a run streams.
    assert re.search(r'<button type="button"[^>]*data-testid="stop" hidden>', page)
    assert 'type="module" src="/static/orkestrel/chat.js"' in page


def test_tool_calls_render_as_cards_with_results_and_denials(
    alice_client, conversation, add_message
):
    add_message(conversation, "user", "list and delete")
    add_message(
        conversation,
        "assistant",
        "",
        calls=[
            {"id": "c1", "name": "workspace", "arguments": {"op": "list"}},
            {"id": "c2", "name": "shell", "arguments": {"cmd": "rm -rf /"}},
        ],
    )
    add_message(conversation, "tool", '["a.txt"]', tool_call_id="c1")
    add_message(conversation, "tool", "denied: destructive", tool_call_id="c2")
    AuthorityDecision.objects.create(
        conversation=conversation,
        tool_call_id="c2",
        tool_name="shell",
        arguments={"cmd": "rm -rf /"},
        rule_label="no-shell",
        zone="deny",
        allowed=False,
        reason="Shell commands are not allowed",
    )
    page = chat(alice_client, conversation)
    assert page.count('data-testid="tool-card"') == 2
    assert "&quot;op&quot;: &quot;list&quot;" in page  # pretty-printed JSON arguments
    assert "&quot;a.txt&quot;" in page
    assert page.count('data-testid="tool-denied"') == 1
    assert "Shell commands are not allowed" in page and "no-shell" in page
    # A tool message is shown inside its call's card, not as a message of its own.
    assert 'data-role="tool"' not in page


def test_a_failed_tool_call_renders_as_an_error_card_after_reload(
    alice_client, conversation, add_message
):
    add_message(conversation, "user", "fetch it")
    add_message(
        conversation,
        "assistant",
        "",
        calls=[
            {"id": "c1", "name": "http_fetch", "arguments": {"url": "http://nowhere"}},
            {"id": "c2", "name": "workspace", "arguments": {"operation": "list"}},
        ],
    )
    add_message(
        conversation,
        "tool",
        '"connection refused"',
        tool_call_id="c1",
        outcome={"kind": "error"},
    )
    add_message(conversation, "tool", '["a.txt"]', tool_call_id="c2", outcome={"kind": "value"})
    page = chat(alice_client, conversation)
    assert page.count('data-testid="tool-failed"') == 1
    failed = page.split('data-call-id="c1"')[1].split('data-call-id="c2"')[0]
    assert "tool-result is-error" in failed and "Error" in failed
    ok = page.split('data-call-id="c2"')[1]
    assert "tool-result is-error" not in ok.split("</details>")[0]


def test_sections_render_as_compaction_notices_with_their_originals(
    alice_client, conversation, add_message
):
    section = Section.objects.create(
        conversation=conversation, section_id="s1", position=0, summary="They discussed **tides**."
    )
    add_message(conversation, "user", "What causes tides?", section=section)
    add_message(conversation, "assistant", "Mostly the moon.", section=section)
    add_message(conversation, "user", "And waves?")
    page = chat(alice_client, conversation)
    assert page.count('data-testid="compaction-notice"') == 1
    notice = page[page.index('data-testid="compaction-notice"') :]
    notice = notice[: notice.index("</details>\n</li>")]
    assert "<strong>tides</strong>" in notice
    assert "Original messages (2)" in notice
    # The originals load when opened, from the section's own URL.
    url = reverse("conversations:section", args=[conversation.pk, "s1"])
    assert f'data-src="{url}"' in notice
    assert "What causes tides?" not in notice
    originals = alice_client.get(url).json()["messages"]
    assert [m["content"] for m in originals] == ["What causes tides?", "Mostly the moon."]
    assert "<details" in notice
    # The originals are not the live answer.
    assert 'data-testid="answer"' not in notice
    assert page.index("compaction-notice") < page.index("And waves?")


def test_initial_state_is_embedded_as_json(alice_client, conversation, add_message):
    add_message(conversation, "user", "</script><script>alert(1)</script>")
    page = chat(alice_client, conversation)
    match = re.search(r'<script id="chat-state" type="application/json">(.*?)</script>', page, re.S)
    assert match, "json_script block missing"
    state = json.loads(match.group(1))
    assert state["conversation"]["id"] == str(conversation.pk)
    assert state["messages"][0]["content"] == "</script><script>alert(1)</script>"


def test_context_meter_is_hidden_without_a_window(alice, alice_client, make_profile):
    profile = make_profile("unbounded", is_default=True)
    conversation = Conversation.objects.create(owner=alice, profile=profile)
    page = chat(alice_client, conversation)
    assert re.search(r'data-testid="context-meter"[^>]*hidden>', page)


def test_a_sections_originals_are_refused_to_other_users_and_to_anonymous_visitors(
    alice_client, conversation, add_message, bob
):
    section = Section.objects.create(conversation=conversation, section_id="s1", position=0)
    add_message(conversation, "user", "secret", section=section)
    url = reverse("conversations:section", args=[conversation.pk, "s1"])
    assert alice_client.get(url).status_code == 200
    other = Client()
    assert other.get(url).status_code == 302  # to the login page
    other.force_login(bob)
    assert other.get(url).status_code == 404
    assert alice_client.get(url.replace("/s1/", "/nope/")).status_code == 404


def test_a_long_tail_renders_its_newest_page_with_a_link_to_the_earlier_messages(
    alice_client, conversation, add_message
):
    for n in range(130):
        add_message(conversation, "user", f"question {n}", message_id=f"u{n}")
        add_message(conversation, "assistant", f"answer {n}", message_id=f"a{n}")
    page = chat(alice_client, conversation)
    assert "answer 129" in page and ">question 0<" not in page
    assert page.count('data-testid="earlier"') == 1
    assert "Show 60 earlier messages" in page
    url = reverse("conversations:messages", args=[conversation.pk])
    assert f'data-src="{url}?before=u30"' in page
    older = alice_client.get(url, {"before": "u30"}).json()
    assert older["earlier"] == 0
    assert [m["id"] for m in older["messages"]][:2] == ["u0", "a0"]
    assert len(older["messages"]) == 60


def test_earlier_messages_need_an_anchor_and_the_owner(
    alice_client, conversation, add_message, bob
):
    add_message(conversation, "user", "hello", message_id="u0")
    url = reverse("conversations:messages", args=[conversation.pk])
    assert alice_client.get(url).status_code == 400
    assert alice_client.get(url, {"before": "nope"}).status_code == 404
    other = Client()
    assert other.get(url, {"before": "u0"}).status_code == 302
    other.force_login(bob)
    assert other.get(url, {"before": "u0"}).status_code == 404
