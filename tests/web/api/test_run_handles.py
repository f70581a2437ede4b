"""Runs as handles: the run list, the run a queued message waits for (and ``wait`` / SSE on
its answer), the run that goes on after a decision, and a conversation's event stream."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AuthorityPolicy, AuthorityRule
from agents.runs import run_service
from conversations.models import Conversation, Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

JSON = "application/json"
SSE = {"Accept": "text/event-stream"}
LIST = {"operation": "list"}
WRITE = {"operation": "write", "path": "notes.md", "content": "hello"}


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
    return Conversation.objects.create(owner=alice, title="Notes", profile=editor())


def parse_events(text: str) -> list[dict]:
    """An SSE body's events as ``{id, event, data}`` (comments skipped)."""
    events = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if not line.startswith(":")
        )
        if fields:
            events.append(
                {"id": fields["id"], "event": fields["event"], "data": json.loads(fields["data"])}
            )
    return events


async def read_all(response) -> str:
    return b"".join([chunk async for chunk in response.streaming_content]).decode()


class Reader:
    """Reads an endless event stream as far as a test needs, event by event."""

    def __init__(self, response) -> None:
        assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
        self.chunks = aiter(response.streaming_content)
        self.text = ""
        self.events: list[dict] = []

    async def until_finish(self, run: int, within: float = 10.0) -> list[dict]:
        """Every event up to run ``run``'s ``finish`` (those read before included)."""
        async with asyncio.timeout(within):
            while not any(e["event"] == "finish" and e["data"]["run"] == run for e in self.events):
                chunk = await anext(self.chunks)
                self.text += chunk.decode() if isinstance(chunk, bytes) else chunk
                whole, _, self.text = self.text.rpartition("\n\n")
                self.events += parse_events(whole)
        return self.events

    async def close(self) -> None:
        close = getattr(self.chunks, "aclose", None)
        if close is not None:
            await close()


async def send(client: AsyncClient, chat: Conversation, text: str, query: str = "", **headers):
    return await client.post(
        f"/api/conversations/{chat.pk}/messages/{query}",
        {"content": text},
        content_type=JSON,
        headers=headers,
    )


async def runs_of(chat: Conversation) -> list[Run]:
    return await sync_to_async(lambda: list(Run.objects.filter(conversation=chat).order_by("id")))()


# -- the run list ----------------------------------------------------------------------------


async def test_the_run_list_is_the_users_runs_newest_first_filtered_and_paged(client, alice, bob):
    mine = await Conversation.objects.acreate(owner=alice, title="mine")
    other = await Conversation.objects.acreate(owner=alice, title="other")
    bobs = await Conversation.objects.acreate(owner=bob, title="bob's")
    statuses = ["done", "error"] * 25 + ["done"]
    await Run.objects.abulk_create(Run(conversation=mine, status=s) for s in statuses)
    elsewhere = await Run.objects.acreate(conversation=other, status="error")
    await Run.objects.acreate(conversation=bobs, status="done")

    first = (await client.get("/api/runs/")).json()
    assert len(first["results"]) == 50 and first["results"][0]["id"] == elsewhere.pk
    second = (await client.get(first["next"])).json()
    listed = [run["id"] for run in first["results"] + second["results"]]
    ours = await sync_to_async(
        lambda: list(
            Run.objects.filter(conversation__owner=alice)
            .order_by("-id")
            .values_list("id", flat=True)
        )
    )()
    assert listed == ours and second["next"] is None

    failed = (await client.get(f"/api/runs/?conversation={mine.pk}&status=error")).json()
    assert len(failed["results"]) == 25
    assert {(r["conversation"], r["status"]) for r in failed["results"]} == {
        (str(mine.pk), "error")
    }
    # Someone else's conversation lists nothing (its runs are not the user's).
    assert (await client.get(f"/api/runs/?conversation={bobs.pk}")).json()["results"] == []
    refused = await client.get("/api/runs/?status=paused&conversation=nope")
    assert refused.status_code == 400
    assert set(refused.json()["errors"]) == {"status", "conversation"}


# -- a message queued behind a run -----------------------------------------------------------


async def test_a_queued_message_names_the_going_run_and_wait_answers_with_it_when_it_took_it(
    client, chat, stub
):
    gate = threading.Event()
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", LIST)], gate=gate),
        reply("openai", ["Both answered."]),
    )
    going = (await send(client, chat, "list my files")).json()
    queued = await send(client, chat, "and this too")
    assert queued.status_code == 202 and queued.json()["run"] == going["id"]
    assert queued["Location"] == f"/api/runs/{going['id']}/"
    # Sent again, with wait: answered once the run that took it settled.
    waiting = await send(client, chat, "and that", "?wait=true")
    gate.set()
    body = json.loads(await read_all(waiting))
    assert body["id"] == going["id"] and body["status"] == "done"
    assert body["content"] == "Both answered."
    # The message the waiting ones went in: joined the going run at its next request.
    assert body["message"]["role"] == "user"
    assert body["message"]["content"] == "and this too\n\nand that"
    assert stub.requests[1].json()["messages"][-1]["content"] == "and this too\n\nand that"
    assert [run.id for run in await runs_of(chat)] == [going["id"]]


async def test_a_queued_message_streams_to_the_end_of_the_next_run_when_the_going_one_ends(
    client, chat, stub
):
    gate = threading.Event()
    stub.enqueue(reply("openai", ["First."], gate=gate), reply("openai", ["Second."]))
    going = (await send(client, chat, "one")).json()["id"]
    streamed = await send(client, chat, "two", **SSE)
    assert streamed.status_code == 200 and streamed["Content-Type"] == "text/event-stream"
    gate.set()
    events = parse_events(await read_all(streamed))
    runs = [run.id for run in await runs_of(chat)]
    assert len(runs) == 2 and runs[0] == going
    answering = runs[1]
    # The going run's frames to its end, then the next run's, whole: ids name run and frame.
    assert [e["id"] for e in events] == [f"{e['data']['run']}.{e['data']['seq']}" for e in events]
    assert {e["data"]["run"] for e in events} == {going, answering}
    finishes = [e for e in events if e["event"] == "finish"]
    assert [f["data"]["run"] for f in finishes] == [going, answering]
    assert events[-1] == finishes[-1]
    started = next(e for e in events if e["data"]["run"] == answering)
    assert started["event"] == "started" and started["data"]["message"]["content"] == "two"
    assert [e["data"] for e in events if e["data"]["run"] == answering] == (
        await run_service.frames(answering)
    )


# -- the run that goes on after a decision -------------------------------------------------


@pytest.fixture
def careful(alice, editor) -> Conversation:
    policy = AuthorityPolicy.objects.create(name="careful")
    AuthorityRule.objects.create(
        policy=policy,
        position=1,
        tool_glob="workspace",
        conditions={"operation": {"in": ["write"]}},
        zone="files",
        verdict="ask",
    )
    return Conversation.objects.create(
        owner=alice, title="Careful", profile=editor(authority_policy=policy)
    )


async def test_a_decision_answers_the_run_that_goes_on(client, careful, stub):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Written."]))
    paused = json.loads(await read_all(await send(client, careful, "write it", "?wait=true")))
    assert paused["status"] == "awaiting_approval"
    approval = (await client.get("/api/approvals/")).json()["results"][0]
    decided = await client.post(
        f"/api/approvals/{approval['id']}/decide/", {"decision": "approve"}, content_type=JSON
    )
    assert decided.status_code == 200
    body = decided.json()
    assert body["status"] == "approved" and body["run"] == paused["id"]
    continued = body["continued_by"]
    assert continued != paused["id"] and decided["Location"] == f"/api/runs/{continued}/"
    await run_service.wait(continued)
    run = (await client.get(f"/api/runs/{continued}/")).json()
    assert (run["status"], run["content"]) == ("done", "Written.")
    assert [r.id for r in await runs_of(careful)] == [paused["id"], continued]


# -- a conversation's event stream ---------------------------------------------------------


async def test_the_conversation_stream_resumes_after_an_event_across_runs(client, chat, stub):
    stub.enqueue(reply("openai", ["One."]), reply("openai", ["Two."]))
    first = json.loads(await read_all(await send(client, chat, "1", "?wait=true")))["id"]
    second = json.loads(await read_all(await send(client, chat, "2", "?wait=true")))["id"]
    frames_one = await run_service.frames(first)
    frames_two = await run_service.frames(second)
    mark = f"{first}.{len(frames_one) - 2}"
    url = f"/api/conversations/{chat.pk}/events/"
    reader = Reader(await client.get(url, headers={"Last-Event-ID": mark}))
    try:
        events = await reader.until_finish(second)
    finally:
        await reader.close()
    assert [e["data"] for e in events] == frames_one[-2:] + frames_two
    assert events[0]["id"] == f"{first}.{len(frames_one) - 1}"
    # ``after`` says the same; an id this stream did not give is refused.
    again = Reader(await client.get(f"{url}?after={events[-3]['id']}"))
    try:
        assert [e["data"] for e in await again.until_finish(second)] == frames_two[-2:]
    finally:
        await again.close()
    for wrong in ("12", f"{first}", "x.1", "999999.1"):
        refused = await client.get(url, headers={"Last-Event-ID": wrong})
        assert refused.status_code == 400, wrong


async def test_the_conversation_stream_follows_the_going_run_then_the_next_one(
    client, chat, stub, bob, issue_key
):
    gate = threading.Event()
    stub.enqueue(reply("openai", ["Three."], gate=gate), reply("openai", ["Four."]))
    going = (await send(client, chat, "3")).json()["id"]
    reader = Reader(await client.get(f"/api/conversations/{chat.pk}/events/"))
    try:
        gate.set()
        events = await reader.until_finish(going)
        assert events[0]["event"] == "started" and events[0]["id"] == f"{going}.1"
        assert [e["data"] for e in events] == await run_service.frames(going)
        # The stream stays open: the next run comes on it as it starts.
        following = (await send(client, chat, "4")).json()["id"]
        events = await reader.until_finish(following)
    finally:
        await reader.close()
    later = [e["data"] for e in events if e["data"]["run"] == following]
    assert later == await run_service.frames(following)
    assert later[0]["message"]["content"] == "4"
    # Another user's conversation is a 404.
    bobs = AsyncClient(authorization=f"Bearer {await sync_to_async(issue_key)(bob)}")
    assert (await bobs.get(f"/api/conversations/{chat.pk}/events/")).status_code == 404
