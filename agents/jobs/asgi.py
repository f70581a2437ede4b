"""Restoring agent jobs when the server starts, whichever ASGI server runs the project.

``RestoreJobs(application)`` wraps the project's ASGI application: a server that sends
``lifespan`` events (uvicorn, hypercorn) gets jobs restored at its startup and stopped at its
shutdown; one that does not (Daphne, ``runserver``) gets them restored at its first
connection. The job service also restores on its own first use, so this only makes sure a
restarted server resumes its jobs before anyone asks about them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .service import job_service, restore_jobs, spawn

__all__ = ["RestoreJobs"]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Application = Callable[[Scope, Receive, Send], Awaitable[None]]


class RestoreJobs:
    """ASGI middleware: restore agent jobs at the server's startup (or first connection)."""

    def __init__(self, app: Application) -> None:
        self.app = app
        self._restored = False
        # Held so the loop (which keeps only weak references to tasks) does not drop it.
        self._restoring: asyncio.Task[list[str]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if not self._restored:
            self._restored = True
            self._restoring = spawn(restore_jobs())
        await self.app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._restored = True
                try:
                    await restore_jobs()
                except Exception:  # noqa: BLE001 - the first use of the service retries
                    logger.warning("restoring agent jobs at startup failed", exc_info=True)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # The jobs stay open: the next process to start takes them over.
                await job_service.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return
