"""Kept request threads: a request's sync work has one thread, kept for the next requests."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.core.signals import request_started

from orkestrel.asgi import application
from orkestrel.request_threads import RequestThreads

pytestmark = pytest.mark.django_db(transaction=True)


class Failed(Exception):
    pass


def _ident() -> int:
    return threading.get_ident()


async def _two_sync_calls(scope: Any, receive: Any, send: Any) -> None:
    """A request that hops to its thread twice; fails when its path says so."""
    first = await sync_to_async(_ident)()
    second = await sync_to_async(_ident)()
    scope["seen"].append((first, second))
    if scope["path"] == "/fail":
        raise Failed
    if scope["path"] == "/slow":
        await scope["gate"].wait()


async def _call(app: RequestThreads, path: str, seen: list[tuple[int, int]], **extra: Any) -> None:
    await app({"type": "http", "path": path, "seen": seen, **extra}, None, None)


async def test_a_request_s_sync_work_shares_one_thread_and_the_next_request_reuses_it():
    app, seen = RequestThreads(_two_sync_calls), []
    await _call(app, "/", seen)
    await _call(app, "/", seen)
    (first, also_first), (second, also_second) = seen
    assert first == also_first and second == also_second
    assert first == second != threading.get_ident()


async def test_a_failed_request_s_thread_is_not_lent_again():
    app, seen = RequestThreads(_two_sync_calls), []
    with pytest.raises(Failed):
        await _call(app, "/fail", seen)
    await _call(app, "/", seen)
    (failed, _), (after, _) = seen
    assert failed != after


async def test_requests_at_once_have_threads_of_their_own_up_to_the_bound_then_share():
    app, seen, gate = RequestThreads(_two_sync_calls, threads=2), [], asyncio.Event()
    slow = [asyncio.create_task(_call(app, "/slow", seen, gate=gate)) for _ in range(5)]
    while len(seen) < 5:
        await asyncio.sleep(0.01)
    gate.set()
    await asyncio.gather(*slow)
    assert len({first for first, _ in seen}) == 2
    assert all(first == second for first, second in seen)


async def _streaming(scope: Any, receive: Any, send: Any) -> None:
    """A response that starts, then streams until its gate opens, then closes on its thread."""
    scope["seen"].append(await sync_to_async(_ident)())
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await scope["gate"].wait()
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    scope["seen"].append(await sync_to_async(_ident)())


async def test_a_streaming_response_holds_no_thread_of_its_own():
    app, gate = RequestThreads(_streaming, threads=4), asyncio.Event()
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    streams: list[list[int]] = [[] for _ in range(10)]
    tasks = []
    for count, seen in enumerate(streams, start=1):
        tasks.append(
            asyncio.create_task(app({"type": "http", "seen": seen, "gate": gate}, None, send))
        )
        while len(sent) < count:  # this one streams before the next one comes
            await asyncio.sleep(0.01)
    gate.set()
    await asyncio.gather(*tasks)
    # Each stream started once its sync work was done: the next request took the same thread.
    assert len({seen[0] for seen in streams}) == 1
    assert all(start == close for start, close in streams)
    assert len(sent) == 20


async def test_the_app_serves_one_request_after_another_on_one_kept_thread():
    # Django's ``request_started`` receivers run on the request's thread: with a new
    # context per request that was a new thread every time.
    threads: list[threading.Thread] = []  # the objects: a finished thread's ident is reused

    def started(**_: Any) -> None:
        threads.append(threading.current_thread())

    request_started.connect(started)
    try:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            for _ in range(5):
                assert (await http.get("/healthz")).status_code == 200
    finally:
        request_started.disconnect(started)
    assert len(threads) == 5
    assert len(set(threads)) == 1


async def _fails_after_its_response(scope: Any, receive: Any, send: Any) -> None:
    scope["seen"].append(await sync_to_async(_ident)())
    await send({"type": "http.response.start", "status": 200, "headers": []})
    raise Failed


async def test_a_request_failing_after_its_response_started_leaves_its_thread_lent():
    app, seen = RequestThreads(_fails_after_its_response), []

    async def send(message: Any) -> None:
        pass

    for _ in range(2):
        with pytest.raises(Failed):
            await app({"type": "http", "seen": seen}, None, send)
    assert seen[0] == seen[1]
