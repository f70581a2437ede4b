"""Following and cancelling a run that another process holds, through Redis."""

from __future__ import annotations

import pytest

from agents.runs import RunManager, RunService
from agents.runs.records import owned_run
from orkestrel.db import in_thread
from tests.web.layers import needs_redis, redis_layer

pytestmark = [pytest.mark.django_db(transaction=True), needs_redis]


async def test_a_follower_in_another_process_gets_every_frame_once_in_order(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    with redis_layer(settings):
        owner = RunService(RunManager())  # the process running the answer
        follower = RunService(RunManager())  # a web process holding an SSE stream
        handle = await owner.start(
            user_id=user.id, conversation_id=str(conversation.id), content="word " * 40
        )
        # Join late, after a few frames went out, and from a sequence number.
        local = []
        async for frame in owner.follow(handle.id):
            local.append(frame)
            if len(local) == 3:
                break
        remote = [frame async for frame in follower.follow(handle.id, after=2)]
        everything = [frame async for frame in owner.follow(handle.id)]
        assert remote == everything[2:]
        assert remote[-1]["type"] == "finish"
        await owner.wait(handle.id)


async def test_a_run_in_another_process_can_be_cancelled_and_keeps_its_partial_answer(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05}
    with redis_layer(settings):
        owner = RunService(RunManager())
        elsewhere = RunService(RunManager())
        handle = await owner.start(
            user_id=user.id, conversation_id=str(conversation.id), content="a long one " * 10
        )
        async for frame in owner.follow(handle.id):
            if frame["type"] == "token":
                break
        record = await in_thread(owned_run)(user.id, handle.id)
        assert await elsewhere.cancel_run(record)
        frames = [frame async for frame in elsewhere.follow(handle.id)]
        assert [f["type"] for f in frames][-2:] == ["abort", "finish"]
        await owner.wait(handle.id)
        settled = await in_thread(owned_run)(user.id, handle.id)
        assert settled.stop_reason == "abort" and settled.content
