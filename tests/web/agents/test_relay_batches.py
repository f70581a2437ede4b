"""The relay carries one layer message per listening process per tick, not one per run."""

from __future__ import annotations

import asyncio
import time

import pytest

from agents.runs import RunManager, RunTimings
from conversations.models import Conversation
from orkestrel.db import in_thread
from tests.web.layers import needs_redis, redis_layer

pytestmark = [pytest.mark.django_db(transaction=True), needs_redis]

RUNS = 6
TICK = 0.05


async def test_a_process_following_many_runs_of_another_gets_them_whole_in_few_messages(
    user, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    with redis_layer(settings):
        conversations = [
            str(c.id)
            for c in await in_thread(
                lambda: [
                    Conversation.objects.create(owner=user, title=f"c{n}", profile=demo)
                    for n in range(RUNS)
                ]
            )()
        ]
        # A worker's manager (every frame crosses the layer) and a web process following.
        owner = RunManager(share_all=True, timings=RunTimings(relay_batch=TICK))
        web = RunManager()
        got: dict[str, list[dict]] = {c: [] for c in conversations}
        finished = {c: asyncio.Event() for c in conversations}
        unfollows = []
        for conversation_id in conversations:

            async def collect(frame, conversation_id=conversation_id):
                got[conversation_id].append(frame)
                if frame["type"] == "finish":
                    finished[conversation_id].set()

            web.subscribe(conversation_id, collect)
            unfollows.append(await web.relay.follow(conversation_id))
        began = time.monotonic()
        for conversation_id in conversations:
            await owner.start(user_id=user.id, conversation_id=conversation_id, content="a " * 30)
        async with asyncio.timeout(20):
            for event in finished.values():
                await event.wait()
        elapsed = time.monotonic() - began
        for conversation_id in conversations:
            frames = got[conversation_id]
            assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
            text = "".join(f["content"] for f in frames if f["type"] == "token")
            assert text == frames[-1]["result"]["content"] and text
        tokens = sum(f["type"] == "token" for frames in got.values() for f in frames)
        batches = web.relay.received["run.batch"]
        # The deltas after the grace period came batched: at most one message per tick for
        # every run together (one per run per tick would be RUNS times as many).
        assert 0 < batches <= elapsed / TICK + 2
        assert batches + web.relay.received["run.frames"] < tokens / 2
        for conversation_id in conversations:
            await owner.wait(conversation_id)
        for unfollow in unfollows:
            await unfollow()
