"""``/api/jobs/``: enqueue (202, durable first), status and result, list, cancel, validation.

The job runs in the test's event loop (``AsyncClient`` is an ASGI client), as under Daphne.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from agents.api.jobs import NewestFirst
from agents.jobs import job_service
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentJob, AgentProfile

pytestmark = pytest.mark.django_db(transaction=True)

HELLO = [{"role": "user", "content": "hello job"}]


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


def job_of(user, profile, **fields) -> AgentJob:
    """A job row; an open one is held by a live process (its heartbeat is fresh)."""
    fields.setdefault("heartbeat", timezone.now())
    return AgentJob.objects.create(
        user=user,
        profile=profile,
        job={"provider": profile.slug, "messages": HELLO},
        status=fields.pop("status", "done"),
        **fields,
    )


async def test_post_answers_202_with_the_stored_job_then_it_runs_to_its_result(
    alice, alice_key, demo
):
    client = client_for(alice_key)
    response = await client.post(
        "/api/jobs/",
        {"profile": "demo", "messages": HELLO, "limit": 3, "retries": 1},
        content_type="application/json",
    )
    assert response.status_code == 202
    body = response.json()
    assert response["Location"] == f"/api/jobs/{body['id']}/"
    assert body["status"] == "queued" and body["profile"] == "demo" and body["attempts"] == 0
    assert body["options"] == {
        "limit": 3,
        "timeout": None,
        "budget": None,
        "allow_partial": False,
        "retries": 1,
    }
    assert body["result"] is None and body["error"] is None
    # Durable before the answer: the row was stored, and is alice's.
    stored = await sync_to_async(AgentJob.objects.get)(pk=body["id"])
    assert stored.user_id == alice.pk
    await job_service.wait(body["id"])
    done = (await client.get(f"/api/jobs/{body['id']}/")).json()
    assert done["status"] == "done" and done["attempts"] == 1
    assert done["result"]["content"].startswith("You said: hello job")
    assert done["result"]["stop"] == "done" and done["result"]["partial"] is False
    assert set(done["result"]["usage"]) == {
        "prompt",
        "completion",
        "total",
        "cache_read",
        "cache_write",
        "reasoning",
        "cost",
    }
    assert done["started"] is not None and done["finished"] is not None


async def test_the_profile_defaults_to_the_default_one(alice_key, demo):
    response = await client_for(alice_key).post(
        "/api/jobs/", {"messages": HELLO}, content_type="application/json"
    )
    assert response.status_code == 202 and response.json()["profile"] == "demo"
    await job_service.wait(response.json()["id"])


async def test_a_failed_job_shows_its_error(alice_key, demo):
    client = client_for(alice_key)
    body = (
        await client.post(
            "/api/jobs/",
            {"messages": [{"role": "user", "content": "list files"}], "limit": 1},
            content_type="application/json",
        )
    ).json()
    await job_service.wait(body["id"])
    failed = (await client.get(f"/api/jobs/{body['id']}/")).json()
    assert failed["status"] == "error"
    assert failed["error"]["code"] == "partial" and failed["error"]["message"]
    assert failed["result"]["stop"] == "exhaust"


async def test_cancel_of_a_settled_job_is_409(alice, alice_key, demo):
    job = await sync_to_async(job_of)(alice, demo)
    response = await client_for(alice_key).post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 409 and response.json()["code"] == "settled"


async def test_cancel_of_a_queued_job_answers_it_cancelled(alice, alice_key, demo):
    job = await sync_to_async(job_of)(alice, demo, status="queued", owner="elsewhere")
    response = await client_for(alice_key).post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "cancelled" and body["cancel_requested"] is True


async def test_another_users_job_is_a_404(alice_key, bob, demo):
    theirs = await sync_to_async(job_of)(bob, demo, status="running", owner="elsewhere")
    client = client_for(alice_key)
    assert (await client.get(f"/api/jobs/{theirs.pk}/")).status_code == 404
    assert (await client.post(f"/api/jobs/{theirs.pk}/cancel/")).status_code == 404
    assert (await client.get(f"/api/jobs/{uuid.uuid4()}/")).status_code == 404
    await sync_to_async(theirs.refresh_from_db)()
    assert theirs.status == "running" and not theirs.cancel_requested


def test_list_is_the_users_own_newest_first_and_cursor_paginated(
    api, alice, bob, demo, monkeypatch
):
    monkeypatch.setattr(NewestFirst, "page_size", 2)
    mine = [job_of(alice, demo) for _ in range(3)]
    job_of(bob, demo)
    # Distinct creation times, oldest first (rows made in one tick would tie on ``created``).
    for age, job in enumerate(reversed(mine)):
        AgentJob.objects.filter(pk=job.pk).update(created=timezone.now() - timedelta(hours=age))
    first = api.get("/api/jobs/").json()
    assert [j["id"] for j in first["results"]] == [str(mine[2].pk), str(mine[1].pk)]
    second = api.get(first["next"]).json()
    assert [j["id"] for j in second["results"]] == [str(mine[0].pk)]
    assert second["next"] is None


def test_unauthenticated_requests_are_401(client, demo):
    assert client.get("/api/jobs/").status_code == 401
    assert client.post("/api/jobs/", {}, content_type="application/json").status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"profile": "nope", "messages": HELLO}, "profile"),
        ({"profile": "off", "messages": HELLO}, "profile"),
        ({"profile": 5, "messages": HELLO}, "profile"),
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hello"}, "messages"),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages"),
        ({"messages": [{"role": "user"}]}, "messages"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages"),
        ({"messages": ["hello"]}, "messages"),
        ({"messages": HELLO, "system": 5}, "system"),
        ({"messages": HELLO, "limit": 0}, "limit"),
        ({"messages": HELLO, "limit": -1}, "limit"),
        ({"messages": HELLO, "limit": "3"}, "limit"),
        ({"messages": HELLO, "limit": 2.5}, "limit"),
        ({"messages": HELLO, "limit": True}, "limit"),
        ({"messages": HELLO, "limit": 101}, "limit"),
        ({"messages": HELLO, "timeout": 0}, "timeout"),
        ({"messages": HELLO, "timeout": -5}, "timeout"),
        ({"messages": HELLO, "timeout": "10"}, "timeout"),
        ({"messages": HELLO, "budget": 0}, "budget"),
        ({"messages": HELLO, "budget": "many"}, "budget"),
        ({"messages": HELLO, "retries": -1}, "retries"),
        ({"messages": HELLO, "retries": 6}, "retries"),
        ({"messages": HELLO, "retries": None}, "retries"),
        ({"messages": HELLO, "allow_partial": "yes"}, "allow_partial"),
        ({"messages": HELLO, "allow_partial": 1}, "allow_partial"),
    ],
)
def test_a_bad_request_is_a_field_error_and_stores_nothing(api, demo, body, field):
    AgentProfile.objects.create(slug="off", name="off", model="demo/echo", enabled=False)
    response = api.post("/api/jobs/", body, format="json")
    assert response.status_code == 400, response.json()
    payload = response.json()
    assert payload["code"] == "invalid" and field in payload["errors"]
    assert not AgentJob.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(api, demo):
    response = api.post("/api/jobs/", [HELLO], format="json")
    assert response.status_code == 400
    assert not AgentJob.objects.exists()


async def test_a_job_shows_how_far_it_got_and_a_malformed_progress_reads_as_none(
    alice, alice_key, demo
):
    progress = {"turns": 2, "tools": 1, "last_tool": "workspace", "tokens": 340, "text": "So far"}
    running = await sync_to_async(job_of)(alice, demo, status="running", progress=progress)
    odd = await sync_to_async(job_of)(alice, demo, progress={"turns": "two", "text": 5})
    client = client_for(alice_key)
    body = (await client.get(f"/api/jobs/{running.pk}/")).json()
    assert body["status"] == "running" and body["progress"] == progress
    body = (await client.get(f"/api/jobs/{odd.pk}/")).json()
    assert body["progress"] == {"turns": 0, "tools": 0, "last_tool": "", "tokens": 0, "text": ""}
