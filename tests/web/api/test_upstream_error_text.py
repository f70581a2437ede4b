"""What a client reads when the model server fails: the failure named (provider, status and
its meaning, or that the server reported an error mid-stream), never the server's own words.

A model server's error body can name accounts or key suffixes that are not ours to redact. The
loopback model server (``tests/providers/server.py``) answers with one; the REST run body, the
SSE frames of the send and of the replay, and the chat websocket's frames must not carry it,
while the server log does (operators read it there).
"""

from __future__ import annotations

import json
import logging

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient

from agents.models import AgentProfile, ProviderEndpoint
from agents.routing import websocket_urlpatterns
from agents.runs import run_service
from conversations.models import Conversation
from tests.providers.server import Reply, StubServer, sse
from tests.web.api.test_runs import client_for, parse_events, read_stream

pytestmark = pytest.mark.django_db(transaction=True)

# Not the endpoint's key (that one is redacted everywhere): what else a body may name.
LEAK = "acct-4417 key sk-...Xq9Z"
WAIT = 15.0


@pytest.fixture(autouse=True)
async def runs_end():
    yield
    await run_service.manager.quiet()


def _http_error() -> Reply:
    body = {"error": {"message": f"Incorrect API key provided for {LEAK}", "type": "auth"}}
    return Reply([json.dumps(body).encode()], status=401, content_type="application/json")


def _stream_error() -> Reply:
    start = {"choices": [{"index": 0, "delta": {"content": "Hal"}, "finish_reason": None}]}
    return Reply(sse(start, {"error": {"message": f"quota of {LEAK} used up"}}))


FAULTS = {
    "http-401": (_http_error, "up/m: the model server answered HTTP 401 (unauthorized)"),
    "mid-stream": (_stream_error, "up/m: the model server reported an error mid-stream"),
}


def _conversation(owner, url: str) -> Conversation:
    ProviderEndpoint.objects.create(name="up", kind="openai", base_url=url, max_retries=0)
    profile = AgentProfile.objects.create(slug="up", name="Up", model="up/m")
    return Conversation.objects.create(owner=owner, title="faults", profile=profile)


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_run_and_its_event_stream_name_the_failure_without_the_servers_words(
    alice, alice_key, stub: StubServer, fault, caplog
):
    replies, message = FAULTS[fault]
    conversation = await sync_to_async(_conversation)(alice, stub.url)
    stub.enqueue(replies())
    client: AsyncClient = client_for(alice_key)
    with caplog.at_level(logging.WARNING, logger="orkestrel.providers"):
        sent = await client.post(
            f"/api/conversations/{conversation.pk}/messages/",
            {"content": "hello"},
            content_type="application/json",
            headers={"accept": "text/event-stream"},
        )
        frames = [event["data"] for event in parse_events(await read_stream(sent))]
    (error,) = [frame for frame in frames if frame["type"] == "error"]
    assert error["message"] == message
    run = (await client.get(f"/api/runs/{frames[0]['run']}/")).json()
    assert run["status"] == "error" and run["error"] == message
    replay = await read_stream(await client.get(f"/api/runs/{frames[0]['run']}/events/"))
    for seen in (json.dumps(frames), json.dumps(run), replay):
        assert LEAK not in seen
    # The operators' copy: the server log names what the model server said.
    assert LEAK in caplog.text


async def test_the_chat_websocket_names_the_failure_without_the_servers_words(
    alice, stub: StubServer
):
    conversation = await sync_to_async(_conversation)(alice, stub.url)
    stub.enqueue(_http_error())
    socket = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns),
        f"/ws/conversations/{conversation.id}/",
        headers=[(b"origin", b"http://testserver")],
    )
    socket.scope["user"] = alice
    connected, _ = await socket.connect()
    assert connected
    assert (await socket.receive_json_from(timeout=WAIT))["type"] == "state"
    await socket.send_json_to({"type": "send", "content": "hello"})
    frames = [await socket.receive_json_from(timeout=WAIT)]
    while not (frames[-1]["type"] in ("finish", "error") and "run" in frames[-1]):
        frames.append(await socket.receive_json_from(timeout=WAIT))
    await socket.disconnect()
    assert frames[-1]["message"] == FAULTS["http-401"][1]
    assert LEAK not in json.dumps(frames)
