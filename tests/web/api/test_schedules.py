"""``/api/schedules/``: a user's own schedules (CRUD, run now, runs); another user's are 404.

The secret shows once, at creation; the jobs a run starts run in the test's loop.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.jobs import job_service
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentJob, AgentProfile, Schedule, ScheduleRun

pytestmark = pytest.mark.django_db(transaction=True)

NEW = {
    "name": "Morning digest",
    "profile": "demo",
    "prompt": "Summarise the news",
    "cron": "0 8 * * 1-5",
    "timezone": "Europe/Lisbon",
}


@pytest.fixture
def demo(db, settings) -> AgentProfile:
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    profile = ensure_demo_profile()
    assert profile is not None
    return profile


@pytest.fixture(autouse=True)
async def stop_jobs():
    yield
    await job_service.shutdown()


def client_for(key: str) -> AsyncClient:
    return AsyncClient(authorization=f"Bearer {key}")


async def create(client: AsyncClient, **changes) -> dict:
    response = await client.post(
        "/api/schedules/", {**NEW, **changes}, content_type="application/json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


async def test_create_shows_the_secret_once_and_plans_the_cron(alice, alice_key, demo):
    client = client_for(alice_key)
    created = await create(client)
    schedule = await Schedule.objects.aget(pk=created["id"])
    assert created["secret"] == schedule.webhook_secret()
    assert created["next_run"] is not None and created["enabled"] is True
    assert created["webhook_url"] == f"http://testserver/hooks/schedules/{schedule.pk}/"
    assert schedule.user_id == alice.pk

    listed = (await client.get("/api/schedules/")).json()["results"]
    one = (await client.get(f"/api/schedules/{schedule.pk}/")).json()
    assert [item["id"] for item in listed] == [created["id"]]
    assert "secret" not in listed[0] and "secret" not in one
    assert schedule.webhook_secret() not in str(listed) + str(one)


async def test_patch_replans_and_delete_removes(alice_key, demo):
    client = client_for(alice_key)
    created = await create(client)
    paused = await client.patch(
        f"/api/schedules/{created['id']}/", {"enabled": False}, content_type="application/json"
    )
    assert paused.status_code == 200
    assert paused.json()["enabled"] is False and paused.json()["next_run"] is None

    moved = await client.patch(
        f"/api/schedules/{created['id']}/",
        {"enabled": True, "cron": "15 6 * * *", "timezone": "UTC"},
        content_type="application/json",
    )
    assert moved.json()["next_run"].endswith("06:15:00Z")

    gone = await client.delete(f"/api/schedules/{created['id']}/")
    assert gone.status_code == 204
    assert not await Schedule.objects.aexists()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"cron": "0 0 8 * * 1"}, "cron"),
        ({"cron": "every morning"}, "cron"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"profile": "nope"}, "profile"),
    ],
)
async def test_an_invalid_schedule_is_a_400_naming_the_field(alice_key, demo, changes, field):
    response = await client_for(alice_key).post(
        "/api/schedules/", {**NEW, **changes}, content_type="application/json"
    )
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert not await Schedule.objects.aexists()


async def test_run_now_starts_a_job_and_the_runs_list_it(alice, alice_key, demo):
    client = client_for(alice_key)
    created = await create(client, enabled=False)
    response = await client.post(f"/api/schedules/{created['id']}/run/")
    assert response.status_code == 202
    job = response.json()
    assert response["Location"] == f"/api/jobs/{job['id']}/"
    settled = await job_service.wait(job["id"])
    assert settled.status == "done" and settled.user_id == alice.pk

    runs = (await client.get(f"/api/schedules/{created['id']}/runs/")).json()["results"]
    assert [(run["trigger"], run["job"]["id"]) for run in runs] == [("run_now", job["id"])]
    assert runs[0]["job"]["status"] == "done"


async def test_run_now_with_a_disabled_profile_is_a_409_and_starts_nothing(alice_key, demo):
    client = client_for(alice_key)
    created = await create(client)
    demo.enabled = False
    await demo.asave(update_fields=["enabled"])
    response = await client.post(f"/api/schedules/{created['id']}/run/")
    assert response.status_code == 409 and response.json()["code"] == "profile_unavailable"
    assert not await AgentJob.objects.aexists() and not await ScheduleRun.objects.aexists()


async def test_another_users_schedule_is_a_404_everywhere(alice_key, bob, issue_key, demo):
    created = await create(client_for(alice_key))
    bobs = client_for(await sync_to_async(issue_key)(bob, "bob's"))
    url = f"/api/schedules/{created['id']}/"
    assert (await bobs.get(url)).status_code == 404
    assert (await bobs.get(f"{url}runs/")).status_code == 404
    assert (await bobs.post(f"{url}run/")).status_code == 404
    patched = await bobs.patch(url, {"enabled": False}, content_type="application/json")
    assert patched.status_code == 404
    assert (await bobs.delete(url)).status_code == 404
    assert (await bobs.get("/api/schedules/")).json()["results"] == []
    schedule = await Schedule.objects.aget()
    assert schedule.enabled and not await AgentJob.objects.aexists()
