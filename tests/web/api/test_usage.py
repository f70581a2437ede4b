"""``GET /api/usage/``: the caller's usage from the ledger (runs, jobs, summaries), over a span,
grouped; a deleted conversation's usage stays counted, another user's is never shown.

Real runs and jobs on the offline demo profile (its endpoint priced), over the ASGI client.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from agents.jobs import job_service
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import ApiKey, ProviderEndpoint, UsageEntry
from agents.runs import run_service
from agents.runtime.spec import load_spec
from agents.runtime.usage import UsageRecorder
from conversations.models import Conversation
from orkestrel.core import TokenUsage

pytestmark = pytest.mark.django_db(transaction=True)

# USD per million tokens: the demo's estimated usage is a few dozen tokens a run.
PRICES = {"input": 1000, "output": 2000}


@pytest.fixture(autouse=True)
async def settle():
    yield
    await run_service.manager.quiet()
    await job_service.shutdown()


@pytest.fixture
def priced(db, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    ensure_demo_profile()
    ProviderEndpoint.objects.filter(name="demo").update(prices={"echo": PRICES})


def client_for(key: str) -> AsyncClient:
    return AsyncClient(authorization=f"Bearer {key}")


async def run_once(client: AsyncClient, owner, content: str = "count me") -> str:
    conversation = await sync_to_async(Conversation.objects.create)(owner=owner, title="ledger")
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    b"".join([chunk async for chunk in response.streaming_content])
    return str(conversation.pk)


async def test_a_runs_usage_is_priced_and_outlives_its_deleted_conversation(
    alice, alice_key, priced
):
    client = client_for(alice_key)
    conversation = await run_once(client, alice)
    before = (await client.get("/api/usage/")).json()
    assert before["usage"]["total"] > 0
    assert Decimal(before["usage"]["cost"]) > 0
    assert before["conversations"] == 1 and before["quotas"] == []
    deleted = await client.delete(f"/api/conversations/{conversation}/")
    assert deleted.status_code == 204
    after = (await client.get("/api/usage/")).json()
    assert after["conversations"] == 0
    assert after["usage"] == before["usage"]
    (row,) = await sync_to_async(list)(UsageEntry.objects.all())
    key = await sync_to_async(ApiKey.objects.get)(user=alice)
    assert (row.kind, row.profile, row.model, row.key_id) == ("run", "demo", "demo/echo", key.pk)
    assert row.key_name == "alice's laptop" and row.outcome == "ok"


async def test_a_job_is_counted_and_priced(alice, alice_key, priced):
    client = client_for(alice_key)
    response = await client.post(
        "/api/jobs/",
        {"profile": "demo", "messages": [{"role": "user", "content": "job tokens"}]},
        content_type="application/json",
    )
    assert response.status_code == 202
    job = response.json()["id"]
    await job_service.wait(job)
    done = (await client.get(f"/api/jobs/{job}/")).json()
    cost = done["result"]["usage"]["cost"]
    assert cost is not None and Decimal(cost) > 0
    usage = (await client.get("/api/usage/")).json()["usage"]
    assert usage["total"] == done["result"]["usage"]["total"]
    assert usage["cost"] == cost
    kinds = await sync_to_async(list)(UsageEntry.objects.values_list("kind", "source"))
    assert kinds == [("job", job)]


async def test_a_summary_is_counted_apart_from_the_conversations_runs(alice, alice_key, priced):
    conversation = await sync_to_async(Conversation.objects.create)(owner=alice, title="s")
    spec = await sync_to_async(load_spec)(str(conversation.pk), alice.pk)
    recorder = UsageRecorder.for_spec(spec)
    await sync_to_async(recorder.add_summary)(TokenUsage(prompt=400, completion=100, total=500))
    body = (await client_for(alice_key).get("/api/usage/?group_by=profile")).json()
    assert body["usage"]["total"] == 500
    # 400 in at $1000/M and 100 out at $2000/M.
    assert body["usage"]["cost"] == "0.6"
    assert body["groups"] == [{"key": "demo", "usage": body["usage"]}]
    row = await sync_to_async(UsageEntry.objects.get)()
    assert row.kind == "summary" and row.key_id is None


def entry(user, days_ago: int, total: int, **fields) -> UsageEntry:
    fields.setdefault("profile", "demo")
    fields.setdefault("model", "demo/echo")
    return UsageEntry.objects.create(
        user=user,
        kind="run",
        total=total,
        prompt=total,
        created=timezone.now() - timedelta(days=days_ago),
        **fields,
    )


@pytest.fixture
def ledger(alice, bob, db):
    entry(alice, 0, 10, key_id=7, key_name="ci", cost=Decimal("0.01"))
    entry(alice, 3, 20, model="other/big", profile="writer")
    entry(alice, 40, 40, key_id=7, key_name="ci")
    entry(bob, 0, 1000)


def test_since_and_until_bound_the_sum(api, ledger):
    today = timezone.now().date()
    assert api.get("/api/usage/").json()["usage"]["total"] == 70
    since = (today - timedelta(days=5)).isoformat()
    assert api.get(f"/api/usage/?since={since}").json()["usage"]["total"] == 30
    until = (today - timedelta(days=1)).isoformat()
    body = api.get(f"/api/usage/?since={since}&until={until}").json()
    assert body["usage"]["total"] == 20
    moment = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert api.get(f"/api/usage/?since={moment}").json()["usage"]["total"] == 10


def test_group_by_day_model_and_key(api, ledger):
    today = timezone.now().date()
    days = api.get("/api/usage/?group_by=day").json()["groups"]
    assert [(g["key"], g["usage"]["total"]) for g in days] == [
        ((today - timedelta(days=40)).isoformat(), 40),
        ((today - timedelta(days=3)).isoformat(), 20),
        (today.isoformat(), 10),
    ]
    models = api.get("/api/usage/?group_by=model").json()["groups"]
    assert [(g["key"], g["usage"]["total"]) for g in models] == [
        ("demo/echo", 50),
        ("other/big", 20),
    ]
    keys = api.get("/api/usage/?group_by=key").json()["groups"]
    assert [(g["key"], g["name"], g["usage"]["total"]) for g in keys] == [
        ("7", "ci", 50),
        (None, "", 20),
    ]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("since=yesterday", "since"),
        ("until=2026-13-01", "until"),
        ("group_by=week", "group_by"),
        ("since=2026-12-05&until=2026-12-01", "until"),
    ],
)
def test_a_bad_parameter_is_a_400_problem(api, ledger, query, field):
    response = api.get(f"/api/usage/?{query}")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "invalid" and field in body["errors"]


def test_another_users_usage_is_never_shown(api, bob, key_client, issue_key, ledger):
    theirs = key_client(issue_key(bob)).get("/api/usage/?group_by=model").json()
    assert theirs["usage"]["total"] == 1000
    assert [g["usage"]["total"] for g in theirs["groups"]] == [1000]
    assert api.get("/api/usage/").json()["usage"]["total"] == 70
