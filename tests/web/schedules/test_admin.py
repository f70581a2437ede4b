"""The schedules' admin: an operator adds one (its secret shown once), runs it now (the next
tick starts it), reads its runs, and the profiles' retention and the purges' reports."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse
from django.utils import timezone

from agents.jobs import job_service
from agents.models import AgentJob, PurgeReport, Schedule
from agents.schedules import tick

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = reverse("admin:agents_schedule_changelist")


def add(client, user, demo) -> str:
    response = client.post(
        reverse("admin:agents_schedule_add"),
        {
            "name": "nightly",
            "user": user.pk,
            "profile": demo.pk,
            "prompt": "Tidy up",
            "cron": "0  2 * * *",
            "timezone": "Europe/Lisbon",
            "enabled": "on",
            "runs-TOTAL_FORMS": "0",
            "runs-INITIAL_FORMS": "0",
        },
        follow=True,
    )
    assert response.status_code == 200
    return response.content.decode()


def test_adding_plans_the_cron_and_shows_the_secret_once(admin_client, user, demo):
    page = add(admin_client, user, demo)
    schedule = Schedule.objects.get()
    assert schedule.cron == "0 2 * * *" and schedule.next_run is not None
    assert schedule.webhook_secret() in page
    change = admin_client.get(reverse("admin:agents_schedule_change", args=[schedule.pk]))
    text = change.content.decode()
    assert f"/hooks/schedules/{schedule.pk}/" in text
    assert schedule.webhook_secret() not in text


def test_a_wrong_cron_is_refused_with_its_reason(admin_client, user, demo):
    response = admin_client.post(
        reverse("admin:agents_schedule_add"),
        {
            "name": "bad",
            "user": user.pk,
            "profile": demo.pk,
            "prompt": "x",
            "cron": "every night",
            "timezone": "UTC",
            "runs-TOTAL_FORMS": "0",
            "runs-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200
    assert "has 2 fields" in response.content.decode()
    assert not Schedule.objects.exists()


async def test_run_now_is_started_by_the_next_tick_and_listed_in_its_runs(admin_client, user, demo):
    await sync_to_async(add)(admin_client, user, demo)
    schedule = await Schedule.objects.aget()
    said = await sync_to_async(admin_client.post)(
        CHANGELIST, {"action": "run_now", "_selected_action": [str(schedule.pk)]}, follow=True
    )
    assert "Starting 1 schedule(s)" in said.content.decode()
    fired = await tick(timezone.now())
    [started] = fired.started
    await job_service.wait(str(started.job.pk))
    page = await sync_to_async(admin_client.get)(
        reverse("admin:agents_schedule_change", args=[schedule.pk])
    )
    text = page.content.decode()
    assert str(started.job.pk) in text and "run now" in text
    assert await AgentJob.objects.acount() == 1


def test_rotating_shows_a_new_secret_and_the_old_one_stops(admin_client, user, demo):
    add(admin_client, user, demo)
    schedule = Schedule.objects.get()
    old = schedule.webhook_secret()
    response = admin_client.post(
        CHANGELIST, {"action": "rotate_secret", "_selected_action": [str(schedule.pk)]}, follow=True
    )
    schedule.refresh_from_db()
    assert schedule.webhook_secret() != old
    assert schedule.webhook_secret() in response.content.decode()


def test_the_profile_form_has_retention_and_the_purges_are_listed(admin_client, demo):
    page = admin_client.get(reverse("admin:agents_agentprofile_change", args=[demo.pk]))
    assert "retain_conversations_days" in page.content.decode()
    PurgeReport.objects.create(trigger="command", counts={"jobs": 3})
    listed = admin_client.get(reverse("admin:agents_purgereport_changelist"))
    assert listed.status_code == 200 and ">3<" in listed.content.decode()
