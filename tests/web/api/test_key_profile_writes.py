"""A key limited to some ``profiles`` cannot use a conversation on another profile through
``/api/``: every write on it (a send, a continue, a regenerate, an edit, a retry, a decision)
is ``403`` ``scope`` and changes nothing, as creating one on that profile is; reading it is
allowed, and the key's own profiles work as before."""

from __future__ import annotations

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile
from conversations.models import Conversation, Message, Run, ToolApproval

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db) -> AgentProfile:
    return ensure_demo_profile() or AgentProfile.objects.get(slug="demo")


@pytest.fixture
def other(demo) -> AgentProfile:
    return AgentProfile.objects.create(slug="other", name="Other", model=demo.model)


@pytest.fixture
def limited(alice, issue_key, key_client, other):
    """A client whose key may use only the ``other`` profile."""
    return key_client(issue_key(alice, "limited", scopes=["read", "run"], profiles=["other"]))


@pytest.fixture
def outside(alice, demo) -> Conversation:
    """Alice's conversation on ``demo``, with a user message, a failed run and a held call."""
    conversation = Conversation.objects.create(owner=alice, profile=demo, title="outside")
    Message.objects.create(
        conversation=conversation, role="user", content="hi", position=0, message_id="m1"
    )
    run = Run.objects.create(conversation=conversation, status="error")
    ToolApproval.objects.create(
        run=run, conversation=conversation, tool_call_id="call_1", tool_name="shell"
    )
    return conversation


def assert_scope(response) -> None:
    assert response.status_code == 403, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "scope" and "'demo'" in body["detail"]


def test_every_write_on_a_conversation_of_another_profile_is_a_scope_refusal(limited, outside):
    base = f"/api/conversations/{outside.pk}"
    message = outside.messages.get()
    run = outside.runs.get()
    approval = outside.approvals.get()
    writes = [
        (f"{base}/messages/", {"content": "and now?"}),
        (f"{base}/messages/", {"content": ""}),  # a continue
        (f"{base}/messages/{message.pk}/regenerate/", {}),
        (f"{base}/messages/{message.pk}/edit/", {"content": "edited"}),
        (f"{base}/compact/", {}),
        (f"{base}/fork/", {"message": str(message.pk)}),
        (f"/api/runs/{run.pk}/retry/", {}),
        (f"/api/approvals/{approval.pk}/decide/", {"decision": "approve"}),
    ]
    for url, body in writes:
        assert_scope(limited.post(url, body, format="json"))
    assert_scope(limited.patch(f"{base}/", {"title": "renamed"}, format="json"))
    # Nothing changed: no message, run, conversation or decision was added.
    assert outside.messages.count() == 1 and outside.runs.count() == 1
    assert Conversation.objects.count() == 1
    assert outside.approvals.get().status == "pending"
    assert Conversation.objects.get().title == "outside"


def test_such_a_conversation_stays_readable_and_deletable(limited, outside):
    assert limited.get(f"/api/conversations/{outside.pk}/").status_code == 200
    assert limited.get(f"/api/conversations/{outside.pk}/messages/").status_code == 200
    assert limited.delete(f"/api/conversations/{outside.pk}/").status_code == 204


def test_a_conversation_without_a_profile_runs_on_the_default_and_is_refused_alike(
    alice, limited, demo
):
    conversation = Conversation.objects.create(owner=alice, profile=None)
    sent = limited.post(
        f"/api/conversations/{conversation.pk}/messages/", {"content": "x"}, format="json"
    )
    assert_scope(sent)
    assert not conversation.messages.exists()


def test_the_keys_own_profile_is_written_as_before(alice, limited, other):
    mine = Conversation.objects.create(owner=alice, profile=other, title="mine")
    renamed = limited.patch(f"/api/conversations/{mine.pk}/", {"title": "ours"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["title"] == "ours"


def test_another_users_conversation_is_still_a_404_not_a_scope_refusal(bob, limited, demo, other):
    theirs = Conversation.objects.create(owner=bob, profile=demo)
    sent = limited.post(
        f"/api/conversations/{theirs.pk}/messages/", {"content": "x"}, format="json"
    )
    assert sent.status_code == 404
