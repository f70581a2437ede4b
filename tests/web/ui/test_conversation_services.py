"""The services behind the pages and the websocket: ownership and ``conversation_state``."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from conversations import services
from conversations.models import AuthorityDecision, Conversation, Section
from conversations.models import Message as MessageRow
from orkestrel.core import CONVERSATION_RECAP_PREFIX, Message, estimate_messages

pytestmark = pytest.mark.django_db


def test_state_has_the_documented_shape(alice, default_profile, add_message):
    conversation = Conversation.objects.create(
        owner=alice,
        title="T",
        profile=default_profile,
        usage_prompt=30,
        usage_completion=12,
        usage_total=42,
    )
    section = Section.objects.create(
        conversation=conversation, section_id="s1", position=0, summary="Recap *text*"
    )
    add_message(conversation, "user", "old question", section=section, message_id="o1")
    add_message(conversation, "user", "Hi **there**", message_id="u1", images=["aGk="])
    add_message(
        conversation,
        "assistant",
        "",
        message_id="a1",
        calls=[{"id": "c1", "name": "workspace", "arguments": {"op": "list"}}],
    )
    add_message(conversation, "tool", "[]", message_id="t1", tool_call_id="c1")

    state = services.conversation_state(user=alice, conversation_id=conversation.pk)

    json.dumps(state)  # JSON-able
    assert state["conversation"] == {
        "id": str(conversation.pk),
        "title": "T",
        "profile": {"id": default_profile.pk, "slug": "helper", "name": "Helper"},
        "summary": None,
        "skills": [],
    }
    assert [m["id"] for m in state["messages"]] == ["u1", "a1", "t1"]
    user = state["messages"][0]
    assert set(user) == {
        "id",
        "role",
        "content",
        "html",
        "calls",
        "tool_call_id",
        "images_count",
        "thinking",
        "thinking_ms",
        "documents",
    }
    assert user["html"] == "<p>Hi <strong>there</strong></p>\n"
    assert user["images_count"] == 1 and user["calls"] is None and user["tool_call_id"] is None
    assert state["messages"][1]["calls"] == [
        {"id": "c1", "name": "workspace", "arguments": {"op": "list"}}
    ]
    assert state["messages"][2]["tool_call_id"] == "c1" and state["messages"][2]["html"] == ""
    assert len(state["sections"]) == 1
    assert state["sections"][0]["id"] == "s1"
    assert state["sections"][0]["summary"] == "Recap *text*"
    # Originals are counted, not shipped: the client fetches them when opened.
    assert state["sections"][0]["messages"] == [] and state["sections"][0]["count"] == 1
    originals = services.section_originals(
        user=alice, conversation_id=conversation.pk, section_id="s1"
    )
    assert [m["id"] for m in originals] == ["o1"]
    assert state["usage"] == {
        "prompt": 30,
        "completion": 12,
        "total": 42,
        "cache_read": 0,
        "cache_write": 0,
        "reasoning": 0,
        "cost": None,
    }
    assert state["context"]["window"] == 8000
    assert state["denials"] == {}


def test_state_context_used_is_the_kit_estimate_of_the_live_view(alice, add_message):
    conversation = Conversation.objects.create(owner=alice)
    section = Section.objects.create(
        conversation=conversation, section_id="s1", position=0, summary="short recap"
    )
    add_message(conversation, "user", "folded " * 50, section=section)
    add_message(conversation, "user", "hello there")
    add_message(conversation, "assistant", "general kenobi")
    expected = estimate_messages(
        [
            Message("s1", "assistant", CONVERSATION_RECAP_PREFIX + "short recap"),
            Message("x", "user", "hello there"),
            Message("y", "assistant", "general kenobi"),
        ]
    )
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    assert state["context"] == {"used": expected, "window": None, "approximate": True}


def test_state_context_is_the_reported_prompt_until_a_fold_comes_after_it(alice, add_message):
    conversation = Conversation.objects.create(owner=alice, context_tokens=900, context_sections=0)
    add_message(conversation, "user", "hello there")
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    assert state["context"] == {"used": 900, "window": None, "approximate": False}
    # A fold since: the count is of a history that is gone, the estimate stands in for it.
    Section.objects.create(conversation=conversation, section_id="s1", position=0, summary="r")
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    assert state["context"]["approximate"] is True and state["context"]["used"] < 900


def test_state_reports_denied_calls(alice, add_message):
    conversation = Conversation.objects.create(owner=alice)
    AuthorityDecision.objects.create(
        conversation=conversation,
        tool_call_id="c9",
        tool_name="shell",
        rule_label="r",
        zone="deny",
        allowed=False,
        reason="no",
    )
    AuthorityDecision.objects.create(
        conversation=conversation, tool_call_id="c8", tool_name="read", zone="allow", allowed=True
    )
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    assert state["denials"] == {"c9": {"reason": "no", "rule": "r"}}


def test_state_falls_back_to_the_default_profile_like_the_runtime(
    alice, default_profile, make_profile
):
    retired = make_profile("retired", enabled=False, context_window=100)
    conversation = Conversation.objects.create(owner=alice, profile=retired)
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    assert state["conversation"]["profile"]["slug"] == "helper"
    assert state["context"]["window"] == 8000


def test_every_service_refuses_another_users_conversation(alice, bob):
    bobs = Conversation.objects.create(owner=bob, title="Bob's")
    for call in (
        lambda: services.conversation_state(user=alice, conversation_id=bobs.pk),
        lambda: services.rename_conversation(user=alice, conversation_id=bobs.pk, title="x"),
        lambda: services.delete_conversation(user=alice, conversation_id=bobs.pk),
        lambda: services.get_conversation(user=alice, conversation_id="not-a-uuid"),
    ):
        with pytest.raises(Http404):
            call()
    bobs.refresh_from_db()
    assert bobs.title == "Bob's"


def test_anonymous_users_are_refused(alice):
    with pytest.raises(PermissionDenied):
        services.list_conversations(user=AnonymousUser())
    with pytest.raises(PermissionDenied):
        services.create_conversation(user=AnonymousUser())


def test_create_without_any_enabled_profile_leaves_the_profile_empty(alice):
    conversation = services.create_conversation(user=alice)
    assert conversation.profile is None and conversation.owner == alice


def test_create_with_an_unknown_profile_is_a_field_error(alice, default_profile):
    with pytest.raises(ValidationError) as caught:
        services.create_conversation(user=alice, profile=default_profile.pk + 1000)
    assert "profile" in caught.value.message_dict
    assert not Conversation.objects.exists()


def test_rename_rejects_a_title_too_long(alice):
    conversation = Conversation.objects.create(owner=alice, title="ok")
    with pytest.raises(ValidationError) as caught:
        services.rename_conversation(user=alice, conversation_id=conversation.pk, title="x" * 201)
    assert "title" in caught.value.message_dict
    conversation.refresh_from_db()
    assert conversation.title == "ok"


def test_rename_does_not_reorder_the_list(alice):
    first = Conversation.objects.create(owner=alice, title="first")
    second = Conversation.objects.create(owner=alice, title="second")
    services.rename_conversation(user=alice, conversation_id=first.pk, title="renamed")
    assert list(services.list_conversations(user=alice)) == [second, first]


def test_section_originals_are_the_owners_only(alice, bob, add_message):
    conversation = Conversation.objects.create(owner=alice)
    section = Section.objects.create(conversation=conversation, section_id="s1", position=0)
    add_message(conversation, "user", "folded **away**", message_id="o1", section=section)
    (original,) = services.section_originals(
        user=alice, conversation_id=conversation.pk, section_id="s1"
    )
    assert original["html"] == "<p>folded <strong>away</strong></p>\n"
    with pytest.raises(Http404):
        services.section_originals(user=bob, conversation_id=conversation.pk, section_id="s1")
    with pytest.raises(Http404):
        services.section_originals(user=alice, conversation_id=conversation.pk, section_id="s2")


def _chat(conversation, add_message, exchanges: int) -> None:
    """``exchanges`` user turns, every third with a tool round trip (4 messages, else 2)."""
    for n in range(exchanges):
        add_message(conversation, "user", f"q{n}", message_id=f"u{n}")
        if n % 3 == 2:
            call = {"id": f"c{n}", "name": "workspace", "arguments": {}}
            add_message(conversation, "assistant", "", message_id=f"a{n}", calls=[call])
            add_message(conversation, "tool", "[]", message_id=f"t{n}", tool_call_id=f"c{n}")
        add_message(conversation, "assistant", f"answer {n}", message_id=f"r{n}")


def test_state_carries_the_newest_page_of_a_long_live_tail_from_a_user_message(alice, add_message):
    conversation = Conversation.objects.create(owner=alice)
    _chat(conversation, add_message, 150)  # 400 live messages
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    shown = state["messages"]
    assert shown[0]["role"] == "user"  # a page never cuts a turn
    assert services.LIVE_PAGE <= len(shown) < services.LIVE_PAGE + 4
    assert state["earlier"] + len(shown) == 400
    assert shown[-1]["id"] == "r149"


def test_earlier_pages_walk_back_to_the_first_message_without_gaps_or_repeats(alice, add_message):
    conversation = Conversation.objects.create(owner=alice)
    _chat(conversation, add_message, 150)
    state = services.conversation_state(user=alice, conversation_id=conversation.pk)
    seen = [m["id"] for m in state["messages"]]
    earlier = state["earlier"]
    while earlier:
        page = services.earlier_messages(
            user=alice, conversation_id=conversation.pk, before=seen[0]
        )
        assert page["messages"][0]["role"] == "user"
        seen = [m["id"] for m in page["messages"]] + seen
        earlier = page["earlier"]
    rows = MessageRow.objects.filter(conversation=conversation).order_by("position")
    assert seen == list(rows.values_list("message_id", flat=True))


def test_earlier_messages_are_the_owners_only_and_need_a_known_anchor(alice, bob, add_message):
    conversation = Conversation.objects.create(owner=alice)
    _chat(conversation, add_message, 2)
    page = services.earlier_messages(user=alice, conversation_id=conversation.pk, before="u1")
    assert [m["id"] for m in page["messages"]] == ["u0", "r0"] and page["earlier"] == 0
    with pytest.raises(Http404):
        services.earlier_messages(user=bob, conversation_id=conversation.pk, before="u1")
    with pytest.raises(Http404):
        services.earlier_messages(user=alice, conversation_id=conversation.pk, before="nope")
