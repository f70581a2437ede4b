"""A few kept threads for Django's per-request sync work, none held while a response streams.

Under ASGI, Django gives each request an asgiref ``ThreadSensitiveContext`` and asgiref starts a
thread for it at its first sync call: the ``request_started`` receivers, then the response's
``close`` (``request_finished``), and a sync view or middleware in between. So even an async
view (a run's SSE stream, ``/v1/chat/completions``) starts and stops a thread, about 1.4 ms
here, and 200 requests at once start 200, each kept for as long as its response streams.
``RequestThreads`` lends each request a single-thread executor (a *lane*) from at most
``threads`` of them (asgiref's ``ThreadSensitiveContext(executor=...)``, whose caller owns the
executor); Django's own context inside it then uses that executor. A request's sync work runs
on one thread, as before; the lane is handed back when the response starts, so a streaming
response holds no thread (its one later hop, ``close``, queues on the lane like any other).
Once every lane is busy, a new request shares the least busy one, as a WSGI server's requests
share its threads. A lane whose request failed or was cancelled before its response may still be
running that request's sync code: it is retired (shut down once its last request is done),
never lent again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from asgiref.sync import ThreadSensitiveContext

__all__ = ["RequestThreads"]

# Any ASGI application (Django's handler types its scope, receive and send its own way).
Application = Callable[[Any, Any, Any], Awaitable[None]]

# Lanes at most: the process's threads stay a small constant however many requests stream.
THREADS: Final = 16


class _Lane:
    """One single-thread executor and the requests on it."""

    __slots__ = ("busy", "executor", "users")

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orkestrel-request")
        self.busy = 0  # requests whose response has not started: they may still run sync work
        self.users = 0  # requests not finished (a streaming one still closes on this lane)


class RequestThreads:
    """ASGI middleware for HTTP: each request's sync work runs on one of a few kept threads."""

    def __init__(self, app: Application, threads: int = THREADS) -> None:
        self.app = app
        self.threads = threads
        self._lanes: list[_Lane] = []

    def _lend(self) -> _Lane:
        lanes = self._lanes
        lane = min(lanes, key=lambda lane: lane.busy, default=None)
        if lane is None or (lane.busy and len(lanes) < self.threads):
            lane = _Lane()
            lanes.append(lane)
        lane.busy += 1
        lane.users += 1
        return lane

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        lane = self._lend()
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            if not started and message["type"] == "http.response.start":
                # From here on the response only streams: the lane serves other requests.
                started = True
                lane.busy -= 1
            await send(message)

        try:
            async with ThreadSensitiveContext(executor=lane.executor):
                await self.app(scope, receive, sending)
        except BaseException:
            # Before its response the request may have left sync work running on the lane;
            # after it, only its ``close`` ran there, which finishes by itself.
            if not started and lane in self._lanes:
                self._lanes.remove(lane)
            raise
        finally:
            if not started:
                lane.busy -= 1
            lane.users -= 1
            if not lane.users and lane not in self._lanes:
                lane.executor.shutdown(wait=False)
