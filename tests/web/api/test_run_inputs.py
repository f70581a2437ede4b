"""Answering an MCP server's request for input over REST (``POST
/api/runs/{id}/input/{request_id}/``): the run's events show the request; content that does not
fit the form is a 400 that changes nothing, an unknown request or another user's run a 404,
and an accept reaches the server's tool call. A real SDK server in a subprocess."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import McpServer
from agents.runs import run_service
from conversations.models import Conversation
from tests.mcp_input_fixtures import asking  # noqa: F401 - a fixture
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(alice, editor, asking) -> Conversation:  # noqa: F811 - asking is a fixture
    profile = editor()
    McpServer.objects.create(name="asking", url=asking.url).profiles.add(profile)
    return Conversation.objects.create(owner=alice, title="Booking", profile=profile)


async def answer(client: AsyncClient, run: int, request: str, **body: Any) -> tuple[int, Any]:
    response = await client.post(
        f"/api/runs/{run}/input/{request}/", body, content_type="application/json"
    )
    return response.status_code, response.json()


async def test_an_api_client_answers_a_servers_request_for_input(
    alice_key, issue_key, bob, chat, stub
):
    stub.enqueue(
        reply("openai", calls=[("c1", "asking__book_table", {"restaurant": "Chez Ada"})]),
        reply("openai", ["Booked."]),
    )
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    started = await client.post(
        f"/api/conversations/{chat.pk}/messages/",
        {"content": "book"},
        content_type="application/json",
    )
    run = started.json()["id"]
    request = None
    async for frame in run_service.follow(run):
        if frame["type"] == "input":
            request = frame["requests"][0]
            break
    assert request is not None and request["mode"] == "form"

    code, body = await answer(client, run, request["id"], action="accept", content={"party": 0})
    assert (code, body["code"]) == (400, "invalid")
    (problem,) = body["errors"]["content"]
    assert "'Party size' must be at least 1" in problem and "'Day' is required" in problem
    code, body = await answer(client, run, request["id"], action="decline", content={"a": 1})
    assert (code, list(body["errors"])) == (400, ["content"])
    code, body = await answer(client, run, request["id"], action="perhaps")
    assert (code, list(body["errors"])) == (400, ["action"])
    code, body = await answer(client, run, "0" * 32, action="decline")
    assert (code, body["code"]) == (404, "not_found")
    bobs = AsyncClient(authorization=f"Bearer {await sync_to_async(issue_key)(bob)}")
    code, body = await answer(bobs, run, request["id"], action="decline")
    assert (code, body["code"], body["detail"]) == (404, "not_found", "No such run.")

    content = {"party": 4, "day": "2026-08-01", "seating": "indoor", "notes": "by the window"}
    code, body = await answer(client, run, request["id"], action="accept", content=content)
    assert (code, body) == (200, {"id": request["id"], "action": "accept", "by": "user"})
    await run_service.wait(run)
    finished = (await client.get(f"/api/runs/{run}/")).json()
    assert (finished["status"], finished["content"]) == ("done", "Booked.")
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(tool["content"]) == {
        "result": "booked 4 at Chez Ada on 2026-08-01, indoor (by the window)"
    }
