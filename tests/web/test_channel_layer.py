"""The channel layer as configured in settings, under the bursts a busy server produces."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
from channels.layers import channel_layers, get_channel_layer

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="set REDIS_URL to run against Redis"
)


@pytest.fixture
def layer():
    channel_layers.backends.clear()  # a layer per test: channels-redis binds to the event loop
    yield get_channel_layer()
    channel_layers.backends.clear()


async def test_a_burst_of_concurrent_group_sends_is_not_refused_by_the_redis_pool(layer):
    # A busy server makes bursts of concurrent layer calls (200 sockets joining, runs
    # announcing); redis-py 8 caps a pool at 100 connections unless told otherwise, and the
    # rest failed outright.
    channel = await layer.new_channel()
    groups = [f"burst-{uuid.uuid4().hex}" for _ in range(150)]
    for group in groups:
        await layer.group_add(group, channel)
    try:
        await asyncio.gather(
            *(layer.group_send(group, {"type": "x", "n": n}) for n, group in enumerate(groups))
        )
        received = [await asyncio.wait_for(layer.receive(channel), 5) for _ in groups]
        assert sorted(message["n"] for message in received) == list(range(len(groups)))
    finally:
        for group in groups:
            await layer.group_discard(group, channel)
