"""``agents.schedules.tick``: a due cron starts its job once, with the clock the test gives.

The jobs run in the test's process (no broker), as with ``make run``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async

from agents.jobs import job_service
from agents.models import AgentJob, Schedule, ScheduleRun
from agents.schedules import tick

pytestmark = pytest.mark.django_db(transaction=True)

# Monday 6 July 2026, 07:00 UTC: 08:00 in Lisbon, an hour before the schedule's 09:00.
MONDAY = datetime(2026, 7, 6, 7, tzinfo=UTC)
NINE_IN_LISBON = datetime(2026, 7, 6, 8, tzinfo=UTC)


async def settled(started) -> list[AgentJob]:
    return [await job_service.wait(str(each.job.pk)) for each in started]


async def test_a_cron_fires_when_due_and_once_per_occurrence(make_schedule):
    schedule = await sync_to_async(make_schedule)(MONDAY)
    assert schedule.next_run == NINE_IN_LISBON

    early = await tick(NINE_IN_LISBON - timedelta(seconds=1))
    assert early.started == () and not await ScheduleRun.objects.aexists()

    fired = await tick(NINE_IN_LISBON + timedelta(seconds=3))
    assert len(fired.started) == 1
    (job,) = await settled(fired.started)
    assert job.status == "done" and job.user_id == schedule.user_id
    assert job.job["messages"] == [{"role": "user", "content": "Say hello"}]
    run = await ScheduleRun.objects.aget()
    assert run.trigger == "cron" and run.due == NINE_IN_LISBON and run.job_id == job.pk

    again = await tick(NINE_IN_LISBON + timedelta(seconds=13))
    assert again.started == ()
    moved = await Schedule.objects.aget(pk=schedule.pk)
    assert moved.next_run == NINE_IN_LISBON + timedelta(days=1)
    assert moved.last_run is not None


async def test_a_schedule_down_for_days_fires_once_then_waits_for_its_next_moment(make_schedule):
    await sync_to_async(make_schedule)(MONDAY)
    late = NINE_IN_LISBON + timedelta(days=3, hours=2)
    fired = await tick(late)
    await settled(fired.started)
    assert len(fired.started) == 1
    following = await Schedule.objects.aget()
    assert following.next_run == NINE_IN_LISBON + timedelta(days=4)


async def test_a_disabled_schedule_does_not_fire_but_run_now_starts_it(make_schedule):
    schedule = await sync_to_async(make_schedule)(MONDAY, enabled=False)
    assert schedule.next_run is None
    assert (await tick(NINE_IN_LISBON + timedelta(days=1))).started == ()

    await Schedule.objects.filter(pk=schedule.pk).aupdate(run_requested=MONDAY)
    fired = await tick(MONDAY + timedelta(seconds=5))
    await settled(fired.started)
    assert [each.job.status for each in fired.started] == ["queued"]
    run = await ScheduleRun.objects.aget()
    assert run.trigger == "run_now"
    assert (await Schedule.objects.aget(pk=schedule.pk)).run_requested is None
    assert (await tick(MONDAY + timedelta(seconds=15))).started == ()


async def test_a_profile_withdrawn_from_its_user_starts_nothing_and_says_why(make_schedule, demo):
    await sync_to_async(make_schedule)(MONDAY)
    demo.enabled = False
    await demo.asave(update_fields=["enabled"])
    fired = await tick(NINE_IN_LISBON)
    assert fired.started == () and len(fired.failed) == 1
    run = await ScheduleRun.objects.aget()
    assert run.job_id is None and "disabled" in run.error
    assert not await AgentJob.objects.aexists()
