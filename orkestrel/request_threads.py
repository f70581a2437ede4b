"""Kept threads for Django's per-request sync work, instead of a new thread per request.

Under ASGI, Django gives each request an asgiref ``ThreadSensitiveContext`` and asgiref starts a
thread for it at its first sync call: the ``request_started`` receivers, then the response's
``close`` (``request_finished``), and a sync view or middleware in between. So even an async
view (a run's SSE stream, ``/v1/chat/completions``) starts and stops a thread, about 1.4 ms
here, and 200 requests at once start 200. ``RequestThreads`` lends each request a
single-thread executor from a pool (asgiref's ``ThreadSensitiveContext(executor=...)``, whose
caller owns the executor); Django's own context inside it then uses that executor. One request
still has one thread to itself for all of its sync work, as before; the thread serves later
requests afterwards, as a WSGI server's threads do (``request_finished`` closes the
connections it used). An executor whose request failed or was cancelled may still be running
that request's sync code: it is shut down, not lent again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from asgiref.sync import ThreadSensitiveContext

__all__ = ["RequestThreads"]

# Any ASGI application (Django's handler types its scope, receive and send its own way).
Application = Callable[[Any, Any, Any], Awaitable[None]]

# Idle executors kept for the next requests; more at once are made, then shut down.
KEPT: Final = 32


class RequestThreads:
    """ASGI middleware for HTTP: each request's sync work runs on a kept thread."""

    def __init__(self, app: Application, kept: int = KEPT) -> None:
        self.app = app
        self.kept = kept
        self._idle: list[ThreadPoolExecutor] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        idle = self._idle
        executor = (
            idle.pop()
            if idle
            else ThreadPoolExecutor(max_workers=1, thread_name_prefix="orkestrel-request")
        )
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.app(scope, receive, send)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        if len(idle) < self.kept:
            idle.append(executor)
        else:
            executor.shutdown(wait=False)
