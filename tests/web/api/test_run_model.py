"""Which model answered is recorded on every run: ``model`` as called (``<endpoint>/<model>``)
and ``response_model`` as the provider reported it, in the run's API body."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Run
from tests.providers.server import Reply, sse
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


def openai_answer(text: str, model: str) -> Reply:
    """A Chat Completions stream whose chunks name ``model``, as OpenAI's do."""

    def chunk(delta: dict, finish: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c1", "object": "chat.completion.chunk", "model": model, "choices": [choice]}

    return Reply(sse(chunk({"content": text}), chunk({}, "stop"), done=True))


@sync_to_async
def conversation_on(alice, kind: str, base_url: str) -> Conversation:
    """Alice's conversation whose profile calls ``stub/small`` on an endpoint of ``kind``."""
    ProviderEndpoint.objects.create(name="stub", kind=kind, base_url=base_url)
    profile = AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/small")
    return Conversation.objects.create(owner=alice, title="Trip", profile=profile)


async def settled_run(alice_key: str, conversation: Conversation) -> dict:
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    sent = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": "hi"},
        content_type="application/json",
    )
    assert sent.status_code == 200
    settled = json.loads(b"".join([chunk async for chunk in sent.streaming_content]))
    assert settled["status"] == "done"
    fetched = await client.get(f"/api/runs/{settled['id']}/")
    assert fetched.status_code == 200
    return fetched.json()


@pytest.mark.parametrize(
    ("kind", "path", "answer", "reported"),
    [
        ("openai", "/v1", openai_answer("ok", "small-2026-01-01"), "small-2026-01-01"),
        # The stub's Ollama lines name the model ``m``.
        ("ollama", "", reply("ollama", ["ok"]), "m"),
    ],
)
async def test_a_run_records_the_model_called_and_the_model_the_provider_reported(
    alice, alice_key, stub, kind, path, answer, reported
):
    conversation = await conversation_on(alice, kind, f"{stub.url}{path}")
    stub.enqueue(answer)
    body = await settled_run(alice_key, conversation)
    assert (body["model"], body["response_model"]) == ("stub/small", reported)
    run = await Run.objects.aget(id=body["id"])
    assert (run.model, run.response_model) == ("stub/small", reported)


async def test_a_provider_that_names_no_model_leaves_response_model_empty(alice, alice_key, stub):
    conversation = await conversation_on(alice, "openai", f"{stub.url}/v1")
    stub.enqueue(reply("openai", ["ok"]))  # the stub's own chunks name no model
    body = await settled_run(alice_key, conversation)
    assert (body["model"], body["response_model"]) == ("stub/small", "")


async def test_the_export_names_the_model_of_each_answer_and_an_import_takes_it(
    alice, alice_key, stub
):
    conversation = await conversation_on(alice, "openai", f"{stub.url}/v1")
    stub.enqueue(openai_answer("ok", "small-2026-01-01"))
    await settled_run(alice_key, conversation)
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    exported = await client.get(f"/api/conversations/{conversation.pk}/export/")
    assert exported.status_code == 200
    raw = exported.content
    records = [json.loads(line) for line in raw.splitlines() if line.strip()]
    messages = [record for record in records if record["type"] == "message"]
    assert [record["role"] for record in messages] == ["user", "assistant"]
    assert "model" not in messages[0]
    assert (messages[1]["model"], messages[1]["response_model"]) == (
        "stub/small",
        "small-2026-01-01",
    )
    # The fields are the export's, not the kit's: an import of it still succeeds.
    imported = await client.post(
        "/api/conversations/import/", raw, content_type="application/jsonl"
    )
    assert imported.status_code == 201
