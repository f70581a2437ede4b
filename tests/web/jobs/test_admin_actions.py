"""The job admin: operators see each job's run and cancel or retry jobs from the list.

The actions are requests in the database; a job service playing the server process acts on
them (its heartbeat stops a cancelled job, its sweep takes a retried one).
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.jobs import JobRequest
from agents.models import AgentJob

from .conftest import until_running

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = reverse("admin:agents_agentjob_changelist")


def act(client, action: str, *jobs: AgentJob) -> str:
    response = client.post(
        CHANGELIST, {"action": action, "_selected_action": [str(j.pk) for j in jobs]}, follow=True
    )
    assert response.status_code == 200
    return response.content.decode()


async def test_retry_runs_a_failed_job_again_and_keeps_its_earlier_run(
    admin_client, user, demo, left_by, services
):
    failed = await sync_to_async(left_by)(
        "web:1:gone",
        user,
        demo,
        status=AgentJob.Status.ERROR,
        age=0,
        error_code="provider_error",
        error="the model server went away",
    )
    await sync_to_async(AgentJob.objects.filter(pk=failed.pk).update)(attempts=1)
    said = await sync_to_async(act)(admin_client, "retry_jobs", failed)
    assert "Queued 1 job(s) again" in said
    await sync_to_async(failed.refresh_from_db)()
    assert failed.status == "queued" and failed.owner == "" and failed.attempts == 0
    service = services("process-a")
    assert await service.restore() == [str(failed.pk)]
    done = await service.wait(str(failed.pk))
    assert done.status == "done" and done.attempts == 1 and done.error == ""
    [earlier] = done.history
    assert earlier["status"] == "error" and earlier["error"] == "the model server went away"
    assert earlier["attempts"] == 1 and earlier["owner"] == "web:1:gone"


async def test_retry_leaves_open_and_finished_jobs_alone(admin_client, user, demo, left_by):
    done = await sync_to_async(left_by)("web:1", user, demo, status=AgentJob.Status.DONE)
    said = await sync_to_async(act)(admin_client, "retry_jobs", done)
    assert "Queued 0 job(s) again" in said
    await sync_to_async(done.refresh_from_db)()
    assert done.status == "done" and done.history == []


async def test_cancel_stops_a_running_job_at_its_holders_next_heartbeat(
    admin_client, user, slow, services
):
    service = services("process-a")
    request = JobRequest(profile=slow, messages=[{"role": "user", "content": "x " * 200}])
    job = await service.enqueue(user_id=user.pk, request=request)
    await until_running(job.pk)
    said = await sync_to_async(act)(admin_client, "cancel_jobs", job)
    assert "Cancelling 1 open job(s)" in said
    settled = await service.wait(str(job.pk))
    assert settled.status == "cancelled"


def test_cancel_reaches_what_a_job_delegated_and_the_list_shows_each_run(
    admin_client, user, demo, left_by
):
    parent = left_by("worker@a:1", user, demo, age=0)
    child = left_by("worker@b:2", user, demo, age=0, parent=parent, depth=1)
    queued = left_by("", user, demo, status=AgentJob.Status.QUEUED, parent=child, depth=2)
    failed = left_by(
        "worker@c:3", user, demo, status=AgentJob.Status.ERROR, error="boom: the tool broke"
    )
    act(admin_client, "cancel_jobs", parent)
    rows = {row.pk: row for row in AgentJob.objects.all()}
    assert rows[parent.pk].cancel_requested and rows[child.pk].cancel_requested
    assert rows[queued.pk].status == "cancelled"
    assert rows[failed.pk].status == "error"
    page = admin_client.get(CHANGELIST).content.decode()
    for shown in ("worker@a:1", "boom: the tool broke", "Running", "Cancelled"):
        assert shown in page
    detail = admin_client.get(reverse("admin:agents_agentjob_change", args=[child.pk]))
    assert detail.status_code == 200 and str(parent.pk) in detail.content.decode()
