import asyncio

import pytest

from orkestrel.core import Channel


async def test_iteration_delivers_pushed_items_then_ends_on_close():
    channel = Channel()
    channel.push(1)
    channel.push(2)
    channel.close()
    channel.push(3)  # ignored once closed
    assert [item async for item in channel] == [1, 2]


async def test_failure_is_raised_after_buffered_items():
    channel = Channel()
    channel.push("a")
    channel.fail(RuntimeError("boom"))
    seen = []
    with pytest.raises(RuntimeError, match="boom"):
        async for item in channel:
            seen.append(item)
    assert seen == ["a"]


async def test_take_drains_in_batches_and_wait_parks_until_an_item():
    channel = Channel()
    waiter = asyncio.ensure_future(channel.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    channel.push(1)
    channel.push(2)
    await asyncio.wait_for(waiter, 1)
    assert channel.take() == [1, 2]
    assert channel.take() == []
    channel.close()
    await channel.wait()  # a closed channel never parks
    assert channel.take() == []


async def test_take_raises_the_failure_once_drained():
    channel = Channel()
    channel.push(1)
    channel.fail(ValueError("bad"))
    assert channel.take() == [1]
    with pytest.raises(ValueError, match="bad"):
        channel.take()
