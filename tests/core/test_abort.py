import asyncio

import pytest

from orkestrel.core import AbortSignal, create_abort, create_timeout


def test_abort_fires_signal_with_reason_and_calls_listeners_once():
    abort = create_abort()
    seen = []
    abort.signal.add_listener(seen.append)
    abort.abort("stop")
    abort.abort("again")
    assert abort.signal.aborted
    assert abort.signal.reason == "stop"
    assert seen == ["stop"]


def test_abort_without_reason_uses_aborted():
    abort = create_abort()
    abort.abort()
    assert abort.signal.reason == "aborted"


def test_removed_listener_is_not_called():
    abort = create_abort()
    seen = []
    abort.signal.add_listener(seen.append)
    abort.signal.remove_listener(seen.append)
    abort.abort()
    assert seen == []


def test_raising_listener_does_not_stop_the_others():
    abort = create_abort()
    seen = []

    def broken(reason):
        raise RuntimeError("boom")

    abort.signal.add_listener(broken)
    abort.signal.add_listener(seen.append)
    abort.abort("x")
    assert seen == ["x"]


def test_chained_abort_follows_its_parent():
    parent = create_abort()
    child = create_abort(parent.signal)
    parent.abort("parent")
    assert child.signal.aborted and child.signal.reason == "parent"


def test_child_abort_does_not_fire_parent():
    parent = create_abort()
    child = create_abort(parent.signal)
    child.abort()
    assert not parent.signal.aborted


def test_any_fires_with_the_first_source():
    a, b = create_abort(), create_abort()
    combined = AbortSignal.any([a.signal, None, b.signal])
    b.abort("b")
    a.abort("a")
    assert combined.reason == "b"


def test_any_of_an_already_aborted_signal_is_born_aborted():
    a = create_abort()
    a.abort("early")
    combined = AbortSignal.any([create_abort().signal, a.signal])
    assert combined.aborted and combined.reason == "early"


def test_any_dispose_unhooks_from_sources():
    a = create_abort()
    combined = AbortSignal.any([a.signal])
    combined.dispose()
    a.abort()
    assert not combined.aborted


def test_any_rejects_non_signals():
    with pytest.raises(TypeError):
        AbortSignal.any(["nope"])


async def test_wait_returns_reason_when_fired():
    abort = create_abort()
    asyncio.get_running_loop().call_soon(abort.abort, "later")
    assert await asyncio.wait_for(abort.signal.wait(), 1) == "later"


async def test_wait_on_fired_signal_returns_at_once():
    abort = create_abort()
    abort.abort("done")
    assert await abort.signal.wait() == "done"


async def test_signal_timeout_fires_with_timeout_reason():
    signal = AbortSignal.timeout(0.01)
    assert await asyncio.wait_for(signal.wait(), 1) == "timeout"


def test_signal_timeout_rejects_negative():
    with pytest.raises(ValueError, match="timeout"):
        AbortSignal.timeout(-1)


async def test_timeout_start_fires_and_clear_disarms():
    fired = create_timeout(0.01).start()
    assert await asyncio.wait_for(fired.signal.wait(), 1) == "timeout"
    cleared = create_timeout(0.01).start()
    cleared.clear()
    await asyncio.sleep(0.03)
    assert not cleared.signal.aborted


async def test_timeout_restart_after_firing_gets_a_fresh_signal():
    timeout = create_timeout(0.005).start()
    await timeout.signal.wait()
    timeout.start()
    assert not timeout.signal.aborted
    timeout.clear()


def test_timeout_rejects_bad_seconds():
    with pytest.raises(ValueError, match="timeout"):
        create_timeout("soon")
