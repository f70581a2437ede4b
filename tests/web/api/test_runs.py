"""Runs through the API: 202 / wait / SSE on send, run status, cancel, resumable events.

The app runs in the test's event loop (``AsyncClient`` is an ASGI client), as under Daphne:
the sync API views reach the run service on that loop.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.routing import websocket_urlpatterns
from agents.runs import RunManager, RunService, run_service
from conversations.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def runs_end():
    """A run goes on after its response (its frames stored): it ends before the database is
    emptied for the next test, or the two deadlock on PostgreSQL."""
    yield
    await run_service.manager.quiet()


@pytest.fixture
def fast(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    ensure_demo_profile()


@pytest.fixture
def slow(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    ensure_demo_profile()


@pytest.fixture
def conversation(alice):
    return Conversation.objects.create(owner=alice, title="api")


def client_for(key: str) -> AsyncClient:
    # Lower-case ASGI header names: ``AsyncClient(headers=...)`` would send them as
    # ``http-authorization``.
    return AsyncClient(authorization=f"Bearer {key}")


def parse_events(text: str) -> list[dict]:
    """An SSE body as ``{id, event, data}`` records (comments skipped)."""
    events = []
    for block in text.strip().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        if fields:
            events.append(
                {
                    "id": fields.get("id"),
                    "event": fields["event"],
                    "data": json.loads(fields["data"]),
                }
            )
    return events


async def read_stream(response) -> str:
    return b"".join([chunk async for chunk in response.streaming_content]).decode()


async def test_send_answers_202_with_the_run_and_the_stored_message(alice_key, conversation, fast):
    client = client_for(alice_key)
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "hello api"},
        content_type="application/json",
    )
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "running" and response["Location"] == f"/api/runs/{body['id']}/"
    # Durable before the answer: the user message is in the database already.
    assert await sync_to_async(
        Message.objects.filter(conversation=conversation, role="user", content="hello api").exists
    )()
    await run_service.wait(body["id"])
    run = (await client.get(f"/api/runs/{body['id']}/")).json()
    assert run["status"] == "done" and run["stop_reason"] == "done"
    assert run["content"].startswith("You said: hello api")


async def test_wait_true_answers_once_the_run_settled(alice_key, conversation, fast):
    response = await client_for(alice_key).post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": "wait for me"},
        content_type="application/json",
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = json.loads(await read_stream(response))
    assert body["status"] == "done"
    assert body["content"].startswith("You said: wait for me")


async def test_accept_event_stream_streams_the_run_on_the_same_response(
    alice_key, conversation, fast
):
    response = await client_for(alice_key).post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "stream it"},
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    events = parse_events(await read_stream(response))
    assert events[0]["event"] == "started" and events[-1]["event"] == "finish"
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    assert all(e["event"] == e["data"]["type"] for e in events)
    text = "".join(e["data"]["content"] for e in events if e["event"] == "token")
    assert text.startswith("You said: stream it")


async def test_a_resumed_follow_equals_an_uninterrupted_one(alice_key, conversation, slow):
    client = client_for(alice_key)
    started = await client.post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "one two three four five six"},
        content_type="application/json",
    )
    run_id = started.json()["id"]
    # A follower that drops after four events, then reconnects with Last-Event-ID.
    first = []
    async for frame in run_service.follow(run_id):
        first.append(frame)
        if len(first) == 4:
            break
    resumed = await client.get(
        f"/api/runs/{run_id}/events/", headers={"Last-Event-ID": str(first[-1]["seq"])}
    )
    rest = parse_events(await read_stream(resumed))
    whole = parse_events(await read_stream(await client.get(f"/api/runs/{run_id}/events/")))
    assert [e["data"] for e in whole] == first + [e["data"] for e in rest]
    assert whole[-1]["event"] == "finish"
    # A settled run replays from the database once it left this process's memory.
    await run_service.wait(run_id)
    fresh = RunService(RunManager())
    stored = [frame async for frame in fresh.follow(run_id, after=2)]
    assert stored == [e["data"] for e in whole[2:]]


async def test_a_websocket_and_an_sse_follower_see_the_same_frames(
    alice, alice_key, conversation, slow
):
    socket = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns),
        f"/ws/conversations/{conversation.pk}/",
        headers=[(b"origin", b"http://testserver")],
    )
    socket.scope["user"] = alice
    connected, _ = await socket.connect()
    assert connected
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    client = client_for(alice_key)
    run_id = (
        await client.post(
            f"/api/conversations/{conversation.pk}/messages/",
            {"content": "both of you"},
            content_type="application/json",
        )
    ).json()["id"]
    sse = [
        e["data"]
        for e in parse_events(await read_stream(await client.get(f"/api/runs/{run_id}/events/")))
    ]
    seen = []
    while not seen or seen[-1]["type"] != "finish":
        seen.append(await socket.receive_json_from(timeout=5))
    await socket.disconnect()
    assert seen == sse


async def test_a_second_send_while_running_waits_as_pending_and_can_be_taken_back(
    alice_key, conversation, slow
):
    client = client_for(alice_key)
    url = f"/api/conversations/{conversation.pk}/messages/"
    first = await client.post(url, {"content": "first"}, content_type="application/json")
    second = await client.post(url, {"content": "second"}, content_type="application/json")
    assert second.status_code == 202
    assert [m["content"] for m in second.json()["pending"]] == ["second"]
    pending = f"/api/conversations/{conversation.pk}/pending/"
    listed = await client.get(pending)
    assert [m["content"] for m in listed.json()["pending"]] == ["second"]
    taken = await client.delete(pending)
    assert taken.json() == {"taken": ["second"], "attachments": []}
    run_service.cancel(str(conversation.pk))
    await run_service.wait(first.json()["id"])
    contents = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation, role="user").values_list(
            "content", flat=True
        )
    )
    assert contents == ["first"]


async def test_cancel_keeps_the_partial_answer(alice_key, conversation, slow):
    client = client_for(alice_key)
    run_id = (
        await client.post(
            f"/api/conversations/{conversation.pk}/messages/",
            {"content": "a long answer please " * 5},
            content_type="application/json",
        )
    ).json()["id"]
    async for frame in run_service.follow(run_id):
        if frame["type"] == "token":
            break
    cancelled = await client.post(f"/api/runs/{run_id}/cancel/")
    assert cancelled.status_code == 202
    await run_service.wait(run_id)
    run = (await client.get(f"/api/runs/{run_id}/")).json()
    assert run["stop_reason"] == "abort" and run["content"]
    again = await client.post(f"/api/runs/{run_id}/cancel/")
    assert again.status_code == 409 and again.json()["code"] == "not_running"


async def test_another_users_run_is_a_404(alice_key, bob, fast):
    theirs = await sync_to_async(Conversation.objects.create)(owner=bob, title="b")
    run = await sync_to_async(Run.objects.create)(conversation=theirs, status="done")
    client = client_for(alice_key)
    assert (await client.get(f"/api/runs/{run.pk}/")).status_code == 404
    assert (await client.get(f"/api/runs/{run.pk}/events/")).status_code == 404
    assert (await client.post(f"/api/runs/{run.pk}/cancel/")).status_code == 404
    assert (await client.get("/api/runs/999999/")).status_code == 404


async def test_a_bad_last_event_id_is_a_400(alice_key, conversation, fast):
    run = await sync_to_async(Run.objects.create)(conversation=conversation, status="done")
    response = await client_for(alice_key).get(
        f"/api/runs/{run.pk}/events/", headers={"Last-Event-ID": "soon"}
    )
    assert response.status_code == 400


async def test_an_error_on_an_event_stream_request_is_json(alice_key, bob, fast):
    response = await client_for(alice_key).get(
        "/api/runs/999999/events/", headers={"Accept": "text/event-stream"}
    )
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "not_found"


async def test_an_image_attached_through_the_api_reaches_the_message(alice_key, conversation, fast):
    client = client_for(alice_key)
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    uploaded = await client.post(
        f"/api/conversations/{conversation.pk}/attachments/",
        {"file": SimpleUploadedFile("a.png", png, content_type="image/png")},
    )
    assert uploaded.status_code == 201
    attachment = uploaded.json()["id"]
    sent = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": "see this", "attachments": [attachment]},
        content_type="application/json",
    )
    assert sent.status_code == 200
    await read_stream(sent)
    stored = await sync_to_async(Message.objects.get)(conversation=conversation, role="user")
    assert len(stored.images) == 1
    again = await client.post(
        f"/api/conversations/{conversation.pk}/messages/",
        {"content": "again", "attachments": [attachment]},
        content_type="application/json",
    )
    assert again.status_code == 400 and "attachments" in again.json()["errors"]
