"""The per-process profile configuration cache: reused while nothing changes, never stale."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import (
    AuthorityPolicy,
    AuthorityRule,
    ConfigRevision,
    Instruction,
    Tool,
    bump_config_revision,
)
from agents.runtime.spec import load_spec
from conversations.services import create_conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    profile = ensure_demo_profile()
    conversation = create_conversation(user=user, title="t")
    return user, profile, str(conversation.id)


def revision() -> int:
    return ConfigRevision.objects.get(pk=1).value


def test_every_kind_of_configuration_write_changes_the_revision(setup):
    _, profile, _ = setup
    seen = {revision()}
    tool = Tool.objects.get(name="workspace")
    tool.summary = "files"
    tool.save()
    seen.add(revision())
    policy = AuthorityPolicy.objects.create(name="p")
    seen.add(revision())
    rule = AuthorityRule.objects.create(policy=policy, position=1, tool_glob="x*")
    seen.add(revision())
    instruction = Instruction.objects.create(name="tone", content="Be brief.")
    seen.add(revision())
    profile.instructions.add(instruction)  # a many-to-many change, no row of its own saved
    seen.add(revision())
    rule.delete()
    seen.add(revision())
    assert len(seen) == 7


def test_a_second_start_on_unchanged_configuration_reads_only_the_conversation(setup):
    user, _, conversation_id = setup
    load_spec(conversation_id, user.id)
    with CaptureQueriesContext(connection) as queries:
        spec = load_spec(conversation_id, user.id)
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert {tool.name for tool in spec.tools} >= {"workspace"}


def test_a_tool_disabled_in_the_admin_is_gone_from_the_next_run(setup):
    user, _, conversation_id = setup
    assert "workspace" in {tool.name for tool in load_spec(conversation_id, user.id).tools}
    tool = Tool.objects.get(name="workspace")
    tool.enabled = False
    tool.save()
    assert "workspace" not in {tool.name for tool in load_spec(conversation_id, user.id).tools}


def test_an_instruction_added_to_the_profile_reaches_the_next_run(setup):
    user, profile, conversation_id = setup
    assert load_spec(conversation_id, user.id).instructions == ()
    profile.instructions.add(Instruction.objects.create(name="tone", content="Be brief."))
    (instruction,) = load_spec(conversation_id, user.id).instructions
    assert instruction["content"] == "Be brief."


def test_a_change_made_by_another_process_is_seen_through_the_revision(setup):
    user, _, conversation_id = setup
    load_spec(conversation_id, user.id)
    # Another process writes behind this one's ORM signals, then moves the revision.
    Tool.objects.filter(name="workspace").update(enabled=False)
    assert "workspace" in {t.name for t in load_spec(conversation_id, user.id).tools}
    bump_config_revision()
    assert "workspace" not in {t.name for t in load_spec(conversation_id, user.id).tools}


def test_a_new_conversation_has_its_workspace_before_its_first_run(setup):
    user, _, conversation_id = setup
    with CaptureQueriesContext(connection) as queries:
        spec = load_spec(conversation_id, user.id)
    assert spec.workspace_id
    assert not any(q["sql"].startswith("INSERT") for q in queries)
