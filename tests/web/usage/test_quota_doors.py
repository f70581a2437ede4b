"""A used-up quota at every door: REST (problem JSON, ``Retry-After``), ``/v1`` (OpenAI's error
shape), the websocket (an ``error`` frame the chat shows) and a job's start; a warning quota
lets the run go on and says so; ``GET /api/usage/`` shows what remains.

Real runs on the offline demo profile; the ledger row that uses the quota up is written as a
settled run's would be.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from agents.consumers import ChatConsumer
from agents.jobs import job_service
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentJob, ApiKey, Quota, UsageEntry
from agents.runs import RunManager, run_service
from conversations.models import Conversation, Run
from tests.web.agents.test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def settle():
    yield
    await run_service.manager.quiet()
    await job_service.shutdown()


@pytest.fixture
def ada(db, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    ensure_demo_profile()
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def key(ada) -> tuple[ApiKey, str]:
    return ApiKey.objects.issue(user=ada, name="ci")


@pytest.fixture
def manager(monkeypatch) -> RunManager:
    fresh = RunManager()
    monkeypatch.setattr(ChatConsumer, "manager", fresh)
    return fresh


def used_up(user, **quota) -> None:
    Quota.objects.create(user=user, period="day", max_tokens=100, **quota)
    UsageEntry.objects.create(user=user, kind="run", total=100)


def client_for(raw: str) -> AsyncClient:
    return AsyncClient(authorization=f"Bearer {raw}")


async def runs_of(user) -> int:
    return await sync_to_async(Run.objects.filter(conversation__owner=user).count)()


async def test_rest_refuses_a_run_with_429_quota_exceeded_and_retry_after(ada, key):
    await sync_to_async(used_up)(ada)
    conversation = await sync_to_async(Conversation.objects.create)(owner=ada)
    response = await client_for(key[1]).post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "over"},
        content_type="application/json",
    )
    assert response.status_code == 429
    assert response["Content-Type"] == "application/problem+json"
    assert int(response["Retry-After"]) > 0
    body = response.json()
    assert body["code"] == "quota_exceeded" and "resets at" in body["detail"]
    assert body["resets_at"].endswith("T00:00:00Z")
    # A refused start changes nothing.
    assert await runs_of(ada) == 0


async def test_v1_refuses_in_openais_error_shape(ada, key):
    await sync_to_async(used_up)(ada)
    response = await client_for(key[1]).post(
        "/v1/chat/completions",
        {"model": "demo", "messages": [{"role": "user", "content": "over"}]},
        content_type="application/json",
    )
    assert response.status_code == 429
    error = json.loads(response.content)["error"]
    assert error["code"] == "quota_exceeded" and "resets at" in error["message"]
    assert int(response["Retry-After"]) > 0
    assert await runs_of(ada) == 0


async def test_a_keys_quota_holds_only_that_key(ada, key):
    @sync_to_async
    def setup():
        Quota.objects.create(api_key=key[0], period="month", max_tokens=1)
        UsageEntry.objects.create(user=ada, kind="run", total=5, key_id=key[0].pk)
        return ApiKey.objects.issue(user=ada, name="other")[1]

    other = await setup()
    body = {"model": "demo", "messages": [{"role": "user", "content": "hi"}]}
    refused = await client_for(key[1]).post("/v1/chat/completions", body, "application/json")
    assert refused.status_code == 429
    allowed = await client_for(other).post("/v1/chat/completions", body, "application/json")
    assert allowed.status_code == 200


async def test_the_websocket_answers_an_error_frame_the_chat_shows(ada, manager):
    await sync_to_async(used_up)(ada)
    conversation = await sync_to_async(Conversation.objects.create)(owner=ada)
    socket, _ = await connect(ada, conversation)
    await socket.send_json_to({"type": "send", "content": "over"})
    frame = await socket.receive_json_from(timeout=5)
    await socket.disconnect()
    assert frame["type"] == "error" and frame["code"] == "quota_exceeded"
    assert frame["message"].startswith("Your daily quota is used up; it resets at")
    assert await runs_of(ada) == 0


async def test_a_job_start_is_refused_likewise(ada, key):
    await sync_to_async(used_up)(ada)
    response = await client_for(key[1]).post(
        "/api/jobs/",
        {"profile": "demo", "messages": [{"role": "user", "content": "over"}]},
        content_type="application/json",
    )
    assert response.status_code == 429 and response.json()["code"] == "quota_exceeded"
    assert await sync_to_async(AgentJob.objects.count)() == 0


async def test_a_warning_quota_lets_a_rest_run_go_on_and_says_so(ada, key, manager):
    await sync_to_async(used_up)(ada, action="warn")
    conversation = await sync_to_async(Conversation.objects.create)(owner=ada)
    response = await client_for(key[1]).post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "still"},
        content_type="application/json",
    )
    assert response.status_code == 202
    assert "Your daily quota is used up" in response["X-Quota-Warning"]
    await run_service.wait(response.json()["id"])


# Apart from the REST door: the test client's request publishes on the channel layer from a
# loop of its own, which a socket in this test's loop must not share (channels_redis' locks).
async def test_a_warning_quota_lets_a_chat_run_go_on_and_says_so(ada, manager):
    await sync_to_async(used_up)(ada, action="warn")
    conversation = await sync_to_async(Conversation.objects.create)(owner=ada)
    socket, _ = await connect(ada, conversation)
    await socket.send_json_to({"type": "send", "content": "again"})
    frames = await frames_until(socket, "finish")
    await socket.disconnect()
    notices = [f for f in frames if f["type"] == "notice" and f["code"] == "quota_warning"]
    assert len(notices) == 1 and "this run goes on" in notices[0]["message"]


async def test_usage_lists_what_each_quota_leaves(ada, key):
    @sync_to_async
    def setup():
        Quota.objects.create(user=ada, period="week", max_tokens=1000, action="warn")
        Quota.objects.create(api_key=key[0], period="month", max_cost="2.5")
        UsageEntry.objects.create(user=ada, kind="run", total=300, cost="0.5", key_id=key[0].pk)

    await setup()
    quotas = (await client_for(key[1]).get("/api/usage/")).json()["quotas"]
    by_subject = {quota["subject"]: quota for quota in quotas}
    assert by_subject["user"]["remaining"] == {"tokens": 700, "cost": None}
    assert by_subject["user"]["action"] == "warn" and by_subject["user"]["period"] == "week"
    assert by_subject["key"]["used"] == {"tokens": 300, "cost": "0.5"}
    assert by_subject["key"]["remaining"] == {"tokens": None, "cost": "2"}
    assert by_subject["key"]["name"] == "ci" and by_subject["key"]["resets_at"].endswith("Z")
