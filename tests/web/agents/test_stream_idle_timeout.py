"""A model that stalls mid-answer, through a whole run: the endpoint's stream idle timeout ends
the run in about that time (not the read timeout's 60 s), keeps the text that streamed, says
why, and retries nothing (a retry would stream the answer a second time).

The model is ``tests/providers/server.py``'s ``StubServer`` speaking the OpenAI wire. The
admin offers the setting with its default.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.models import AgentProfile, ProviderEndpoint
from agents.runs import RunManager
from conversations.models import Conversation, Message, Run
from tests.providers.server import StubServer
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

IDLE = 0.5  # the endpoint's stream idle timeout, in seconds
SLACK = 4.0  # what a busy 2-core box may add to a run's start and end


def _conversation(user: Any, url: str) -> Conversation:
    endpoint = ProviderEndpoint.objects.create(
        name="stalling",
        kind="openai",
        base_url=f"{url}/v1",
        read_timeout=60.0,
        max_retries=2,
        stream_idle_timeout=IDLE,
    )
    profile = AgentProfile.objects.create(
        slug="stalling", name="stalling", model=f"{endpoint.name}/m"
    )
    return Conversation.objects.create(owner=user, title="stall", profile=profile)


def _settled(conversation: Conversation) -> tuple[Run, list[tuple[str, str]]]:
    run = Run.objects.get(conversation=conversation)
    transcript = Message.objects.filter(conversation=conversation).order_by("position")
    return run, list(transcript.values_list("role", "content"))


async def test_a_model_that_stalls_mid_answer_ends_the_run_at_the_idle_timeout_keeping_its_text(
    user: Any, stub: StubServer, manager: RunManager
) -> None:
    conversation = await sync_to_async(_conversation)(user, stub.url)
    # Two deltas, then the connection stays open and silent; a second answer is scripted for a
    # retry that must not happen.
    stub.enqueue(
        reply("openai", ["Half of ", "an answer"], end=False, hold=True),
        reply("openai", ["A second answer."]),
    )
    frames: list[dict[str, Any]] = []

    async def hear(frame: dict[str, Any]) -> None:
        frames.append(frame)

    manager.subscribe(str(conversation.id), hear)
    started = time.monotonic()
    await manager.start(
        user_id=user.id, conversation_id=str(conversation.id), content="please answer"
    )
    async with asyncio.timeout(IDLE + SLACK + 10):
        await manager.wait(str(conversation.id))
    elapsed = time.monotonic() - started
    await manager.drain()

    reason = f"the model stopped sending for {IDLE:g} s"
    assert IDLE <= elapsed < IDLE + SLACK
    last = frames[-1]
    assert (last["type"], last["code"]) == ("error", "run_failed"), last
    assert reason in last["message"]
    tokens = "".join(f["content"] for f in frames if f["type"] == "token")
    assert tokens == "Half of an answer"
    run, transcript = await sync_to_async(_settled)(conversation)
    assert (run.status, run.content) == ("error", "Half of an answer")
    assert reason in run.error
    assert transcript == [("user", "please answer"), ("assistant", "Half of an answer")]
    assert (len(stub.requests), stub.pending) == (1, 1)
    # The stalled connection was dropped, not held until the read timeout.
    assert await asyncio.to_thread(stub.closed.wait, 2.0)


def test_the_endpoint_admin_offers_the_stream_idle_timeout_at_30_s(admin_client: Any) -> None:
    page = admin_client.get(reverse("admin:agents_providerendpoint_add")).content.decode()
    assert 'name="stream_idle_timeout" value="30.0"' in page
    assert "How long the answer may pause once it has begun" in page
