"""``agents.retention``: the purge deletes what is past its time, kind by kind, per profile.

Each test sets the retention it needs and ages rows by writing their times directly; the
purge is given its ``now``. The usage ledger is an account, not a view: it survives.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import RETENTION_KINDS, AgentJob, AgentProfile, PurgeReport
from agents.models.usage import UsageEntry
from agents.retention import purge, purge_if_due
from conversations.models import (
    AuthorityDecision,
    Conversation,
    Run,
    ToolApproval,
    ToolFailure,
)

pytestmark = pytest.mark.django_db

NOW = timezone.now()
OLD = NOW - timedelta(days=40)
RECENT = NOW - timedelta(days=3)


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def demo(db) -> AgentProfile:
    profile = ensure_demo_profile()
    assert profile is not None
    return profile


@pytest.fixture
def keep(settings):
    """``keep(**days)``: the setting's days by kind (the others: for ever)."""

    def set_days(**days: int) -> None:
        settings.ORKESTREL = {
            **settings.ORKESTREL,
            "RETENTION_DAYS": {kind: days.get(kind) for kind in RETENTION_KINDS},
        }

    return set_days


def conversation(user, profile, *, at, runs: int = 1, status: str = "done") -> Conversation:
    """A conversation last active ``at``, with ``runs`` runs, each with its logs, all as old."""
    found = Conversation.objects.create(owner=user, title="old", profile=profile)
    for number in range(runs):
        run = Run.objects.create(
            conversation=found, status=status, events=[{"type": "started", "seq": 0}]
        )
        call_id = f"call-{found.pk}-{number}"
        AuthorityDecision.objects.create(
            run=run, conversation=found, tool_name="clock", zone="read", allowed=True
        )
        ToolFailure.objects.create(
            run=run, conversation=found, tool_call_id=call_id, tool_name="clock", error="boom"
        )
        ToolApproval.objects.create(
            run=run,
            conversation=found,
            tool_call_id=call_id,
            tool_name="write_file",
            status=ToolApproval.Status.APPROVED,
            applied=True,
        )
    for model in (Run, AuthorityDecision, ToolFailure, ToolApproval):
        model.objects.filter(conversation=found).update(created=at)
    Conversation.objects.filter(pk=found.pk).update(updated=at, created=at)
    return found


def job(user, profile, *, at, status: str = "done") -> AgentJob:
    row = AgentJob.objects.create(
        user=user,
        profile=profile,
        job={"provider": profile.slug, "messages": [{"role": "user", "content": "hi"}]},
        status=status,
    )
    AgentJob.objects.filter(pk=row.pk).update(created=at)
    return row


def ledger(user, source: str) -> UsageEntry:
    return UsageEntry.objects.create(
        user=user, kind="run", source=source, prompt=100, completion=20, total=120, created=OLD
    )


def test_nothing_is_purged_while_no_retention_is_set(user, demo, keep):
    keep()
    conversation(user, demo, at=OLD)
    job(user, demo, at=OLD)
    result = purge(now=NOW)
    assert result.total == 0
    assert Conversation.objects.count() == 1 and AgentJob.objects.count() == 1


def test_only_conversations_past_their_time_go_and_the_ledger_keeps_its_totals(user, demo, keep):
    keep(conversations=30)
    old = conversation(user, demo, at=OLD)
    recent = conversation(user, demo, at=RECENT)
    ledger(user, str(old.runs.get().pk))
    ledger(user, str(recent.runs.get().pk))

    result = purge(now=NOW)

    assert result.counts["conversations"] == 1
    assert list(Conversation.objects.values_list("pk", flat=True)) == [recent.pk]
    # Its runs and logs went with it; the recent one's are all there.
    assert Run.objects.filter(conversation=recent).count() == 1
    assert not Run.objects.filter(conversation_id=old.pk).exists()
    assert UsageEntry.objects.count() == 2
    assert sum(UsageEntry.objects.values_list("total", flat=True)) == 240


def test_a_conversation_with_a_run_still_going_is_kept(user, demo, keep):
    keep(conversations=30)
    conversation(user, demo, at=OLD, status="running")
    assert purge(now=NOW).counts["conversations"] == 0
    assert Conversation.objects.count() == 1


def test_each_kind_goes_by_its_own_days(user, demo, keep):
    keep(run_events=7, decisions=30, tool_failures=60, approvals=30)
    old = conversation(user, demo, at=OLD)
    recent = conversation(user, demo, at=RECENT)

    result = purge(now=NOW)

    assert result.counts == {
        "conversations": 0,
        "runs": 0,
        "run_events": 1,
        "approvals": 1,
        "decisions": 1,
        "tool_failures": 0,
        "jobs": 0,
    }
    assert Run.objects.get(conversation=old).events == []
    assert Run.objects.get(conversation=recent).events != []
    assert not AuthorityDecision.objects.filter(conversation=old).exists()
    assert AuthorityDecision.objects.filter(conversation=recent).exists()
    assert ToolFailure.objects.count() == 2  # 40 days old, kept 60
    assert ToolApproval.objects.filter(conversation=recent).count() == 1


def test_runs_and_jobs_past_their_time_go_but_not_open_ones(user, demo, keep):
    keep(runs=30, jobs=30)
    conversation(user, demo, at=OLD)
    waiting = conversation(user, demo, at=OLD, status="awaiting_approval")
    conversation(user, demo, at=RECENT)
    old_job = job(user, demo, at=OLD)
    job(user, demo, at=OLD, status="queued")
    job(user, demo, at=RECENT)
    ledger(user, str(old_job.pk))

    result = purge(now=NOW)

    assert result.counts["runs"] == 1 and result.counts["jobs"] == 1
    assert Run.objects.count() == 2
    assert Run.objects.filter(conversation=waiting).exists()
    assert not AgentJob.objects.filter(pk=old_job.pk).exists()
    assert AgentJob.objects.count() == 2
    # The conversations stay, their messages too: only the runs' records went.
    assert Conversation.objects.count() == 3
    assert UsageEntry.objects.get().total == 120


def test_a_profile_overrides_the_setting_both_ways(user, demo, keep):
    keep(conversations=30)
    forever = AgentProfile.objects.create(
        slug="archive", name="archive", model=demo.model, retain_conversations_days=0
    )
    brief = AgentProfile.objects.create(
        slug="brief", name="brief", model=demo.model, retain_conversations_days=2
    )
    conversation(user, demo, at=OLD)  # the setting: 30 days, past
    kept = conversation(user, forever, at=OLD)  # 0: for ever
    short = conversation(user, brief, at=RECENT)  # 2 days: past
    fresh = conversation(user, brief, at=NOW - timedelta(hours=1))
    orphan = conversation(user, None, at=RECENT)  # no profile: the setting

    assert purge(now=NOW).counts["conversations"] == 2

    left = set(Conversation.objects.values_list("pk", flat=True))
    assert left == {kept.pk, fresh.pk, orphan.pk}
    assert short.pk not in left


def test_a_dry_run_counts_and_changes_nothing(user, demo, keep):
    keep(conversations=30, run_events=7, jobs=30)
    conversation(user, demo, at=OLD)
    conversation(user, demo, at=RECENT)
    job(user, demo, at=OLD)

    result = purge(now=NOW, dry_run=True)

    assert result.dry_run
    assert result.counts["conversations"] == 1
    assert result.counts["run_events"] == 1
    assert result.counts["jobs"] == 1
    assert Conversation.objects.count() == 2 and AgentJob.objects.count() == 1
    assert all(run.events for run in Run.objects.all())


def test_the_command_reports_counts_per_kind_and_keeps_a_report(user, demo, keep):
    keep(jobs=30)
    job(user, demo, at=OLD)
    out = StringIO()
    call_command("purge", "--dry-run", stdout=out)
    assert "jobs: 1" in out.getvalue() and "total would delete: 1" in out.getvalue()
    assert AgentJob.objects.count() == 1 and not PurgeReport.objects.exists()

    out = StringIO()
    call_command("purge", stdout=out)
    assert "jobs: 1" in out.getvalue() and "conversations: 0" in out.getvalue()
    assert not AgentJob.objects.exists()
    report = PurgeReport.objects.get()
    assert report.trigger == "command" and report.counts["jobs"] == 1


def test_the_daily_purge_runs_once_per_occurrence(user, demo, keep, settings):
    keep(jobs=30)
    settings.ORKESTREL = {**settings.ORKESTREL, "PURGE_CRON": "30 3 * * *"}
    job(user, demo, at=OLD)
    day = NOW.replace(hour=3, minute=31, second=0, microsecond=0)

    first = purge_if_due(day)
    assert first is not None and first.counts["jobs"] == 1
    assert purge_if_due(day + timedelta(hours=5)) is None  # the same occurrence
    job(user, demo, at=OLD)
    following = purge_if_due(day + timedelta(days=1))
    assert following is not None and following.counts["jobs"] == 1
    assert PurgeReport.objects.filter(trigger="daily").count() == 2


def test_the_daily_purge_records_nothing_when_everything_is_kept(user, demo, keep):
    keep()
    assert purge_if_due(NOW) is None
    assert not PurgeReport.objects.exists()
