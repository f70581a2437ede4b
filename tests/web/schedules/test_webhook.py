"""``POST /hooks/schedules/<id>/``: a signed body starts the schedule's job (202); a bad,
expired or replayed signature, or a disabled schedule, changes nothing."""

from __future__ import annotations

import time
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from agents.jobs import job_service
from agents.models import AgentJob, Schedule, ScheduleRun
from agents.schedules import HEADER, TOLERANCE, sign

pytestmark = pytest.mark.django_db(transaction=True)

BODY = b'{"ref": "refs/heads/main"}'


def hook(schedule: Schedule) -> str:
    return f"/hooks/schedules/{schedule.pk}/"


async def post(schedule: Schedule, body: bytes, signature: str | None):
    headers = {} if signature is None else {HEADER: signature}
    return await AsyncClient().post(
        hook(schedule), body, content_type="application/json", headers=headers
    )


async def nothing_changed() -> None:
    assert not await ScheduleRun.objects.aexists()
    assert not await AgentJob.objects.aexists()


@pytest.fixture
async def schedule(make_schedule) -> Schedule:
    return await sync_to_async(make_schedule)(timezone.now())


async def test_a_signed_body_starts_the_job_and_answers_202_with_it(schedule):
    signature = sign(schedule.webhook_secret(), BODY, int(time.time()))
    response = await post(schedule, BODY, signature)

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["profile"] == "demo"
    assert body["url"] == f"http://testserver/api/jobs/{body['id']}/"
    assert response["Location"] == f"/api/jobs/{body['id']}/"
    job = await job_service.wait(body["id"])
    assert job.status == "done"
    # The body follows the prompt in the job's message.
    content = job.job["messages"][0]["content"]
    assert content.startswith("Say hello\n\n") and content.endswith(BODY.decode())
    run = await ScheduleRun.objects.aget()
    assert run.trigger == "webhook" and str(run.job_id) == body["id"]


async def test_a_replayed_signature_is_refused_and_starts_nothing_more(schedule):
    signature = sign(schedule.webhook_secret(), BODY, int(time.time()))
    first = await post(schedule, BODY, signature)
    assert first.status_code == 202
    await job_service.wait(first.json()["id"])

    again = await post(schedule, BODY, signature)

    assert again.status_code == 409
    assert again["Content-Type"] == "application/problem+json"
    assert again.json()["code"] == "signature_replayed"
    assert await AgentJob.objects.acount() == 1 and await ScheduleRun.objects.acount() == 1


@pytest.mark.parametrize(
    ("make_header", "code"),
    [
        (lambda secret, now: None, "signature_missing"),
        (lambda secret, now: "sha256=deadbeef", "signature_malformed"),
        (lambda secret, now: sign("whsec_guess", BODY, now), "signature_mismatch"),
        (lambda secret, now: sign(secret, b"{}", now), "signature_mismatch"),
        (lambda secret, now: sign(secret, BODY, now - TOLERANCE - 5), "signature_expired"),
    ],
)
async def test_a_bad_signature_is_a_401_and_changes_nothing(schedule, make_header, code):
    response = await post(schedule, BODY, make_header(schedule.webhook_secret(), int(time.time())))
    assert response.status_code == 401
    assert response.json()["code"] == code
    await nothing_changed()


async def test_a_disabled_schedule_refuses_even_a_good_signature(schedule):
    await Schedule.objects.filter(pk=schedule.pk).aupdate(enabled=False)
    response = await post(schedule, BODY, sign(schedule.webhook_secret(), BODY, int(time.time())))
    assert response.status_code == 409 and response.json()["code"] == "schedule_disabled"
    await nothing_changed()


async def test_an_unknown_schedule_is_a_404_and_a_get_a_405(schedule):
    ghost = Schedule(pk=uuid.uuid4())
    response = await post(ghost, BODY, sign("x", BODY, int(time.time())))
    assert response.status_code == 404
    assert (await AsyncClient().get(hook(schedule))).status_code == 405
    await nothing_changed()


async def test_a_rotated_secret_no_longer_signs(schedule):
    old = schedule.webhook_secret()
    schedule.secret_salt = "a-new-salt"
    await schedule.asave(update_fields=["secret_salt"])
    assert schedule.webhook_secret() != old
    response = await post(schedule, BODY, sign(old, BODY, int(time.time())))
    assert response.status_code == 401
    await nothing_changed()
