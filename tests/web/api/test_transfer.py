"""Export and import of conversations as JSON Lines, round trip and validation."""

from __future__ import annotations

import json

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation, Message
from conversations.services import create_conversation
from conversations.stores import DjangoConversationStore

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(alice):
    profile = ensure_demo_profile()
    conversation = create_conversation(user=alice, profile=profile, title="Tools")
    call = {"id": "c1", "name": "workspace", "arguments": {"op": "list"}}
    DjangoConversationStore(owner=alice.pk).set_sync(
        {
            "id": str(conversation.pk),
            "summary": "They said hello.",
            "sections": [
                {
                    "id": "s1",
                    "summary": "They said hello.",
                    "messages": [
                        {"id": "m1", "role": "user", "content": "hello"},
                        {"id": "m2", "role": "assistant", "content": "hi!"},
                    ],
                }
            ],
            "messages": [
                {"id": "m3", "role": "user", "content": "list files"},
                {"id": "m4", "role": "assistant", "content": "", "calls": [call]},
                {"id": "m5", "role": "tool", "content": "[]", "tool_call_id": "c1"},
                {"id": "m6", "role": "assistant", "content": "No files yet."},
            ],
        }
    )
    return conversation


def lines(response) -> list[dict]:
    return [json.loads(line) for line in response.content.decode().splitlines()]


def test_export_is_one_record_per_section_and_message_in_order(api, stored):
    response = api.get(f"/api/conversations/{stored.pk}/export/")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/jsonl")
    records = lines(response)
    assert records[0] == {
        "type": "conversation",
        "title": "Tools",
        "profile": stored.profile.slug,
        "summary": "They said hello.",
    }
    assert [(r["type"], r.get("id"), r.get("section")) for r in records[1:]] == [
        ("section", "s1", None),
        ("message", "m1", "s1"),
        ("message", "m2", "s1"),
        ("message", "m3", None),
        ("message", "m4", None),
        ("message", "m5", None),
        ("message", "m6", None),
    ]
    assert records[5]["calls"][0]["name"] == "workspace" and records[6]["tool_call_id"] == "c1"


def test_an_import_of_an_export_round_trips_into_a_new_conversation(api, alice, stored):
    exported = api.get(f"/api/conversations/{stored.pk}/export/").content
    response = api.generic(
        "POST", "/api/conversations/import/", exported, content_type="application/jsonl"
    )
    assert response.status_code == 201
    copy = response.json()["id"]
    assert copy != str(stored.pk)
    assert Conversation.objects.get(pk=copy).owner == alice
    again = api.get(f"/api/conversations/{copy}/export/").content
    assert lines_of(again) == lines_of(exported)


def lines_of(body: bytes) -> list[dict]:
    return [json.loads(line) for line in body.decode().splitlines()]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"not json\n", "line 1: not valid JSON"),
        (b'{"type": "message", "id": "m", "role": "user", "content": "x"}\n', "first record"),
        (b'{"type": "conversation"}\n{"type": "message", "id": 3}\n', "line 2: not a valid"),
        (b'{"type": "conversation"}\n{"type": "odd"}\n', "unknown record type"),
        (
            b'{"type": "conversation"}\n'
            b'{"type": "message", "id": "a", "role": "user", "content": "x", "section": "zz"}\n',
            "unknown or closed section",
        ),
        (
            b'{"type": "conversation"}\n'
            b'{"type": "message", "id": "a", "role": "user", "content": "x"}\n'
            b'{"type": "message", "id": "a", "role": "user", "content": "y"}\n',
            "",
        ),
        (b"\xff\xfe", ""),
    ],
)
def test_a_bad_import_is_a_400_naming_the_line_and_stores_nothing(api, alice, body, fragment):
    ensure_demo_profile()
    response = api.generic(
        "POST", "/api/conversations/import/", body, content_type="application/jsonl"
    )
    assert response.status_code == 400
    assert fragment in json.dumps(response.json())
    assert not Conversation.objects.exists() and not Message.objects.exists()


def test_another_users_export_is_a_404(key_client, issue_key, bob, stored):
    assert (
        key_client(issue_key(bob)).get(f"/api/conversations/{stored.pk}/export/").status_code == 404
    )


def test_import_needs_json_lines(api):
    response = api.post("/api/conversations/import/", {"type": "conversation"}, format="json")
    assert response.status_code == 415
