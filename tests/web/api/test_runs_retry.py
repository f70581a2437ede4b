"""Retrying a run that failed, was stopped or interrupted: ``POST /api/runs/{id}/retry/``."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, ProviderEndpoint
from agents.runs import run_service
from conversations.models import Conversation, Message, Run
from conversations.services import conversation_state
from tests.providers.server import Reply
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(alice, stub) -> Conversation:
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/m")
    return Conversation.objects.create(owner=alice, title="retries", profile=profile)


async def settled(client: AsyncClient, url: str, body: dict | None = None) -> tuple[int, dict]:
    response = await client.post(url, body or {}, content_type="application/json")
    raw = (
        b"".join([chunk async for chunk in response.streaming_content])
        if response.streaming
        else response.content
    )
    return response.status_code, json.loads(raw)


async def test_a_failed_run_is_retried_on_the_same_history_and_then_answers(
    alice, alice_key, chat, stub
):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(Reply([b'{"error": "down"}'], status=503, content_type="x/json"))
    status, failed = await settled(
        client, f"/api/conversations/{chat.pk}/messages/?wait=true", {"content": "hello"}
    )
    assert status == 200 and failed["status"] == "error"
    state = await sync_to_async(conversation_state)(user=alice, conversation_id=chat.pk)
    assert state["last_run"]["id"] == failed["id"] and state["last_run"]["status"] == "error"

    stub.enqueue(reply("openai", ["Back again."]))
    retried = await client.post(f"/api/runs/{failed['id']}/retry/")
    assert retried.status_code == 202 and retried["Location"].endswith(f"/{retried.json()['id']}/")
    await run_service.wait(retried.json()["id"])
    roles = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation=chat).order_by("position").values_list("role")
        )
    )()
    assert roles == [("user",), ("assistant",)]
    # The model saw the same history: the one user message, no second copy.
    assert [m["role"] for m in stub.requests[1].json()["messages"]] == ["user"]
    state = await sync_to_async(conversation_state)(user=alice, conversation_id=chat.pk)
    assert state["last_run"] is None


async def test_only_the_latest_unfinished_run_can_be_retried(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(Reply([b"{}"], status=503, content_type="x/json"), reply("openai", ["ok"]))
    url = f"/api/conversations/{chat.pk}/messages/?wait=true"
    _, failed = await settled(client, url, {"content": "one"})
    _, done = await settled(client, url, {"content": "two"})
    assert done["status"] == "done"
    for run_id, why in ((done["id"], "only a failed"), (failed["id"], "a later run")):
        refused = await client.post(f"/api/runs/{run_id}/retry/")
        assert refused.status_code == 409 and why in refused.json()["detail"]
    assert await sync_to_async(Run.objects.filter(conversation=chat).count)() == 2
