"""Regenerate, edit and choose alternatives through the REST API: ``202`` with the run, the
model sees the chosen branch only, ``409`` while a run is going, ``404`` for others' ids."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, ProviderEndpoint
from agents.runs import run_service
from conversations.models import Conversation
from tests.providers.server import Reply
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(alice, stub) -> Conversation:
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/m")
    return Conversation.objects.create(owner=alice, title="branches", profile=profile)


def seen(stub: Any, request: int) -> list[str]:
    return [
        m["content"] for m in stub.requests[request].json()["messages"] if m["role"] != "system"
    ]


async def post(client: AsyncClient, url: str, body: dict[str, Any] | None = None) -> Any:
    return await client.post(url, body or {}, content_type="application/json")


async def settle(response: Any) -> dict[str, Any]:
    assert response.status_code == 202, response.content
    body = response.json()
    assert response["Location"].endswith(f"/{body['id']}/")
    await run_service.wait(body["id"])
    return body


async def transcript(client: AsyncClient, chat: Conversation) -> list[dict[str, Any]]:
    return (await client.get(f"/api/conversations/{chat.pk}/messages/")).json()["messages"]


async def test_regenerate_then_choose_the_first_answer_and_go_on_from_it(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    base = f"/api/conversations/{chat.pk}"
    stub.enqueue(reply("openai", ["One."]), reply("openai", ["Two."]), reply("openai", ["Next."]))
    await settle(await post(client, f"{base}/messages/", {"content": "hello"}))
    hello, _ = await transcript(client, chat)
    await settle(await post(client, f"{base}/messages/{hello['id']}/regenerate/"))
    assert seen(stub, 1) == ["hello"]
    branches = (await client.get(f"{base}/branches/")).json()["branches"]
    assert [(b["point"], b["index"], b["count"]) for b in branches] == [(hello["id"], 2, 2)]

    chosen = await post(client, f"{base}/branches/", {"point": hello["id"], "index": 1})
    assert chosen.status_code == 200 and chosen.json()["branches"][0]["index"] == 1
    assert [m["content"] for m in await transcript(client, chat)] == ["hello", "One."]
    await settle(await post(client, f"{base}/messages/", {"content": "more"}))
    assert seen(stub, 2) == ["hello", "One.", "more"]


async def test_edit_answers_the_new_wording_and_keeps_the_old_turn(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    base = f"/api/conversations/{chat.pk}"
    stub.enqueue(reply("openai", ["A."]), reply("openai", ["B."]))
    await settle(await post(client, f"{base}/messages/", {"content": "first try"}))
    question, answer = await transcript(client, chat)
    blank = await post(client, f"{base}/messages/{question['id']}/edit/", {"content": ""})
    assert blank.status_code == 400 and "content" in blank.json()["errors"]
    not_user = await post(client, f"{base}/messages/{answer['id']}/edit/", {"content": "x"})
    assert not_user.status_code == 409 and not_user.json()["code"] == "not_branchable"
    edited = await post(client, f"{base}/messages/{question['id']}/edit/", {"content": "better"})
    await settle(edited)
    assert seen(stub, 1) == ["better"]
    assert [m["content"] for m in await transcript(client, chat)] == ["better", "B."]
    await post(client, f"{base}/branches/", {"point": "", "index": 1})
    assert [m["content"] for m in await transcript(client, chat)] == ["first try", "A."]


async def test_a_retried_failure_stays_reachable_as_the_other_alternative(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    base = f"/api/conversations/{chat.pk}"
    stub.enqueue(Reply([b'{"error": "down"}'], status=503, content_type="x/json"))
    failed = await client.post(
        f"{base}/messages/?wait=true", {"content": "hi"}, content_type="application/json"
    )
    raw = b"".join([c async for c in failed.streaming_content]) if failed.streaming else None
    failed_id = json.loads(raw or failed.content)["id"]
    stub.enqueue(reply("openai", ["Back."]))
    await settle(await client.post(f"/api/runs/{failed_id}/retry/"))
    (branch,) = (await client.get(f"{base}/branches/")).json()["branches"]
    assert (branch["index"], branch["count"]) == (2, 2)
    await post(client, f"{base}/branches/", {"point": branch["point"], "index": 1})
    (attempt,) = (await client.get(f"{base}/branches/")).json()["branches"]
    assert attempt["message"] is None and attempt["error"]


async def test_busy_answers_409_and_others_ids_are_404(alice_key, bob, issue_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    base = f"/api/conversations/{chat.pk}"
    stub.enqueue(reply("openai", ["One."]))
    await settle(await post(client, f"{base}/messages/", {"content": "hello"}))
    hello, _ = await transcript(client, chat)
    gate = threading.Event()
    stub.enqueue(reply("openai", ["Slow."], gate=gate))
    running = await post(client, f"{base}/messages/{hello['id']}/regenerate/")
    assert running.status_code == 202
    for url, body in (
        (f"{base}/messages/{hello['id']}/regenerate/", None),
        (f"{base}/messages/{hello['id']}/edit/", {"content": "hi"}),
        (f"{base}/branches/", {"point": hello["id"], "index": 1}),
    ):
        refused = await post(client, url, body)
        assert refused.status_code == 409 and refused.json()["code"] == "busy", url
    gate.set()
    await run_service.wait(running.json()["id"])

    stranger = AsyncClient(authorization=f"Bearer {await sync_to_async(issue_key)(bob)}")
    for url, body in (
        (f"{base}/messages/{hello['id']}/regenerate/", None),
        (f"{base}/messages/{hello['id']}/edit/", {"content": "hi"}),
        (f"{base}/branches/", {"point": hello["id"], "index": 1}),
    ):
        assert (await post(stranger, url, body)).status_code == 404, url
    assert (await stranger.get(f"{base}/branches/")).status_code == 404
    unknown = await post(client, f"{base}/messages/nope/regenerate/")
    assert unknown.status_code == 404
    assert (
        await post(client, f"{base}/branches/", {"point": hello["id"], "index": 9})
    ).status_code == 404
