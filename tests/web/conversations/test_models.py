"""Conversation rows: validation on save, the database backstop, and what reads well."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.models import AgentProfile, AuthorityPolicy, AuthorityRule
from conversations.models import AuthorityDecision, Conversation, Message, Run, Section
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(user) -> Conversation:
    return Conversation.objects.create(owner=user, title="Plans")


def message(conversation: Conversation, **fields) -> Message:
    values = {"message_id": "m1", "position": 0, "role": "user", "content": "hi"} | fields
    return Message(conversation=conversation, **values)


def test_str_reads_well(conversation) -> None:
    assert str(conversation) == "Plans"
    assert str(Conversation(owner=conversation.owner)).startswith("Conversation ")
    assert str(message(conversation)) == "user: hi"
    assert str(message(conversation, content="x" * 100)).endswith("...")
    run = Run.objects.create(conversation=conversation)
    assert str(run) == f"Run {run.pk} (queued)"
    decision = AuthorityDecision(conversation=conversation, tool_name="rm", zone="z", allowed=False)
    assert str(decision) == "rm denied"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"role": "robot"}, "role"),
        ({"calls": [{"id": "c"}]}, "calls"),
        ({"calls": {"id": "c", "name": "n", "arguments": {}}}, "calls"),
        ({"images": ["ok", 3]}, "images"),
        ({"message_id": ""}, "message_id"),
    ],
)
def test_full_clean_names_the_bad_message_field(conversation, fields, field) -> None:
    with pytest.raises(ValidationError) as caught:
        message(conversation, **fields).full_clean()
    assert field in caught.value.message_dict
    assert not Message.objects.exists()


def test_a_message_cannot_belong_to_another_conversations_section(conversation, user) -> None:
    other = Conversation.objects.create(owner=user)
    section = Section.objects.create(conversation=other, section_id="s", position=0)
    with pytest.raises(ValidationError) as caught:
        message(conversation, section=section).full_clean()
    assert "section" in caught.value.message_dict


def test_message_and_section_ids_are_unique_per_conversation(conversation, user) -> None:
    message(conversation).save()
    message(Conversation.objects.create(owner=user)).save()
    with pytest.raises(IntegrityError), transaction.atomic():
        message(conversation, position=1).save()
    Section.objects.create(conversation=conversation, section_id="s", position=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Section.objects.create(conversation=conversation, section_id="s", position=1)


def test_the_database_refuses_an_unknown_role_or_status(conversation) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        message(conversation, role="robot").save()
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(conversation=conversation, status="lost")


def test_a_run_cannot_finish_before_it_started(conversation) -> None:
    now = timezone.now()
    run = Run(conversation=conversation, started=now, finished=now - timedelta(seconds=1))
    with pytest.raises(ValidationError) as caught:
        run.full_clean()
    assert "finished" in caught.value.message_dict
    with pytest.raises(IntegrityError), transaction.atomic():
        run.save()
    run.finished = now + timedelta(seconds=3)
    run.full_clean()
    run.save()
    assert run.duration == 3.0
    assert Run(conversation=conversation).duration is None


def test_a_decision_cannot_point_at_another_conversations_run(conversation, user) -> None:
    run = Run.objects.create(conversation=Conversation.objects.create(owner=user))
    decision = AuthorityDecision(
        conversation=conversation, run=run, tool_name="rm", zone="default", allowed=False
    )
    with pytest.raises(ValidationError) as caught:
        decision.full_clean()
    assert "run" in caught.value.message_dict


def test_deleting_a_workspace_keeps_its_conversations(conversation, user) -> None:
    workspace = Workspace.objects.create(owner=user)
    conversation.workspace = workspace
    conversation.save()
    workspace.delete()
    conversation.refresh_from_db()
    assert conversation.workspace is None


def test_deleting_a_conversation_takes_everything_under_it(conversation) -> None:
    section = Section.objects.create(conversation=conversation, section_id="s", position=0)
    message(conversation, section=section).save()
    run = Run.objects.create(conversation=conversation)
    AuthorityDecision.objects.create(
        conversation=conversation, run=run, tool_name="rm", zone="default", allowed=False
    )
    conversation.delete()
    for model in (Section, Message, Run, AuthorityDecision):
        assert not model.objects.exists()


def test_to_dict_is_the_kits_message_shape(conversation) -> None:
    plain = message(conversation)
    assert plain.to_dict() == {"id": "m1", "role": "user", "content": "hi"}
    tool = message(conversation, role="tool", content="ok", tool_call_id="c1", images=["aGk="])
    assert tool.to_dict() == {
        "id": "m1",
        "role": "tool",
        "content": "ok",
        "images": ["aGk="],
        "tool_call_id": "c1",
    }


def test_a_deleted_rule_or_profile_leaves_the_history_readable(conversation) -> None:
    policy = AuthorityPolicy.objects.create(name="guard")
    rule = AuthorityRule.objects.create(policy=policy, position=2, tool_glob="delete_*")
    profile = AgentProfile.objects.create(slug="helper", name="Helper", model="local/llama")
    conversation.profile = profile
    conversation.save()
    decision = AuthorityDecision.objects.create(
        conversation=conversation,
        tool_name="delete_file",
        rule=rule,
        rule_label="#2 delete_* → deny",
        zone="default",
        allowed=False,
    )
    assert list(rule.decisions.all()) == [decision]
    assert list(profile.conversations.all()) == [conversation]
    rule.delete()
    profile.delete()
    decision.refresh_from_db()
    conversation.refresh_from_db()
    assert decision.rule is None and decision.rule_label == "#2 delete_* → deny"
    assert conversation.profile is None
