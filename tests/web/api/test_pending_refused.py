"""Over REST: a message queued behind a run is accepted (``202``) even when the model becomes
unavailable meanwhile; when the run ends, the conversation's event stream gets an ``error``
event coded ``model_unavailable`` in place of the next run, the message stays pending and no
run is left open; a send to the idle conversation is then refused (``409``), nothing stored."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import ProviderEndpoint
from agents.runs import run_service
from conversations.models import Conversation, PendingMessage, Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

JSON = "application/json"


@pytest.fixture(autouse=True)
async def runs_end():
    """Runs go on after their responses: they end before the database is emptied."""
    yield
    await run_service.manager.quiet()


@pytest.fixture
def client(alice_key) -> AsyncClient:
    return AsyncClient(authorization=f"Bearer {alice_key}")


@pytest.fixture
def chat(alice, editor) -> Conversation:
    return Conversation.objects.create(owner=alice, title="Soon off", profile=editor())


async def send(client: AsyncClient, chat: Conversation, text: str):
    return await client.post(
        f"/api/conversations/{chat.pk}/messages/", {"content": text}, content_type=JSON
    )


async def events_until_error(response, within: float = 10.0) -> list[dict]:
    """The stream's events (``event`` and ``data``) up to the first ``error`` one."""
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    chunks, text, events = aiter(response.streaming_content), "", []
    try:
        async with asyncio.timeout(within):
            while not any(event["event"] == "error" for event in events):
                chunk = await anext(chunks)
                text += chunk.decode() if isinstance(chunk, bytes) else chunk
                whole, _, text = text.rpartition("\n\n")
                for block in whole.split("\n\n"):
                    lines = [line for line in block.splitlines() if not line.startswith(":")]
                    fields = dict(line.split(": ", 1) for line in lines)
                    if fields:
                        events.append(
                            {"event": fields["event"], "data": json.loads(fields["data"])}
                        )
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
    return events


@sync_to_async
def disable_endpoint() -> None:
    endpoint = ProviderEndpoint.objects.get(name="stub")
    endpoint.enabled = False
    endpoint.save()


@sync_to_async
def pending_and_runs(chat: Conversation) -> tuple[list[str], list[str]]:
    pending = PendingMessage.objects.filter(conversation=chat).values_list("content", flat=True)
    runs = Run.objects.filter(conversation=chat).order_by("id").values_list("status", flat=True)
    return list(pending), list(runs)


async def test_a_queued_message_whose_model_is_disabled_meanwhile_gets_followers_an_error_and_stays_pending(  # noqa: E501
    client, chat, stub
):
    gate = threading.Event()
    stub.enqueue(reply("openai", ["First."], gate=gate))
    going = await send(client, chat, "one")
    assert going.status_code == 202 and going.json()["status"] == "running", going.content
    stream = await client.get(f"/api/conversations/{chat.pk}/events/")
    while not stub.requests:  # "one" is at the model: "two" cannot join that request
        await asyncio.sleep(0.01)
    await disable_endpoint()
    queued = await send(client, chat, "two")
    assert queued.status_code == 202, queued.content
    assert [item["content"] for item in queued.json()["pending"]] == ["two"]
    gate.set()

    events = await events_until_error(stream)
    finishes = [e for e in events if e["event"] == "finish"]
    assert [f["data"]["run"] for f in finishes] == [going.json()["id"]]
    error = events[-1]["data"]
    assert error["code"] == "model_unavailable" and "stub/m" in error["message"]
    await run_service.manager.quiet()
    assert await pending_and_runs(chat) == (["two"], ["done"])
    assert len(stub.requests) == 1

    # Nothing is going now: a further send is refused at once and changes nothing.
    refused = await send(client, chat, "three")
    assert refused.status_code == 409 and refused.json()["code"] == "model_unavailable"
    assert await pending_and_runs(chat) == (["two"], ["done"])
