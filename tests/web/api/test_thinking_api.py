"""Through the REST API: an answer's reasoning in the transcript, kept by export, import and
fork; the conversation body names its active skills."""

from __future__ import annotations

import json

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation
from conversations.services import create_conversation
from conversations.stores import DjangoConversationStore
from conversations.writer import Thought, stored_thinking, write_thinking

pytestmark = pytest.mark.django_db

THOUGHT = Thought("They want the files: list the workspace.", 1840)


@pytest.fixture
def thought(alice) -> Conversation:
    conversation = create_conversation(user=alice, profile=ensure_demo_profile(), title="Thinks")
    call = {"id": "c1", "name": "workspace", "arguments": {"operation": "list"}}
    DjangoConversationStore(owner=alice.pk).set_sync(
        {
            "id": str(conversation.pk),
            "sections": [],
            "messages": [
                {"id": "m1", "role": "user", "content": "my files?"},
                {"id": "m2", "role": "assistant", "content": "", "calls": [call]},
                {"id": "m3", "role": "tool", "content": "[]", "tool_call_id": "c1"},
                {"id": "m4", "role": "assistant", "content": "None yet."},
            ],
        }
    )
    write_thinking(conversation.pk, {"m2": THOUGHT, "m4": Thought("Say so plainly.")})
    return conversation


def test_the_transcript_carries_each_answers_thinking_and_its_duration(api, thought):
    body = api.get(f"/api/conversations/{thought.pk}/messages/").json()
    shown = {m["id"]: (m["thinking"], m["thinking_ms"]) for m in body["messages"]}
    assert shown == {
        "m1": ("", None),
        "m2": (THOUGHT.text, THOUGHT.ms),
        "m3": ("", None),
        "m4": ("Say so plainly.", None),
    }


def test_export_import_and_fork_keep_the_thinking(api, thought):
    exported = api.get(f"/api/conversations/{thought.pk}/export/").content
    records = {r.get("id"): r for r in map(json.loads, exported.decode().splitlines())}
    assert (records["m2"]["thinking"], records["m2"]["thinking_ms"]) == (THOUGHT.text, THOUGHT.ms)
    assert "thinking" not in records["m1"]
    imported = api.generic(
        "POST", "/api/conversations/import/", exported, content_type="application/jsonl"
    )
    assert imported.status_code == 201, imported.content
    copy = imported.json()["id"]
    assert stored_thinking(copy) == stored_thinking(thought.pk)
    assert api.get(f"/api/conversations/{copy}/export/").content == exported
    forked = api.post(f"/api/conversations/{thought.pk}/fork/", {"message": "m3"}, format="json")
    assert forked.status_code == 201, forked.content
    assert stored_thinking(forked.json()["id"]) == {"m2": THOUGHT}


def test_an_import_with_malformed_thinking_is_a_400_naming_the_line(api, alice):
    ensure_demo_profile()
    body = (
        b'{"type": "conversation"}\n'
        b'{"type": "message", "id": "a", "role": "assistant", "content": "x", '
        b'"thinking": "hm", "thinking_ms": -5}\n'
    )
    response = api.generic(
        "POST", "/api/conversations/import/", body, content_type="application/jsonl"
    )
    assert response.status_code == 400
    assert "line 2: thinking" in json.dumps(response.json())
    assert not Conversation.objects.exists()


def test_the_conversation_body_names_its_active_skills(api, thought):
    Conversation.objects.filter(pk=thought.pk).update(skills=["reviewer", "translator"])
    body = api.get(f"/api/conversations/{thought.pk}/").json()
    assert body["skills"] == ["reviewer", "translator"]
    listed = api.get("/api/conversations/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [row["skills"] for row in rows] == [["reviewer", "translator"]]
