"""Starting the scheduler in the server process, when agent jobs run there (no broker).

``RunScheduler(application)`` wraps the project's ASGI application and starts the scheduler
on the server's loop at its first event (a lifespan startup with uvicorn, the first
connection with Daphne), then passes everything on. When jobs run on Celery workers, the
workers tick (``agents.schedules.tasks``) and this does nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..jobs import job_service
from .ticker import Scheduler

__all__ = ["RunScheduler"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Application = Callable[[Scope, Receive, Send], Awaitable[None]]


class RunScheduler:
    """ASGI middleware: the server process's scheduler, started at its first event."""

    def __init__(self, app: Application, scheduler: Scheduler | None = None) -> None:
        self.app = app
        self.scheduler = scheduler or Scheduler()
        self._checked = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._checked:
            self._checked = True
            if not job_service.on_workers:
                self.scheduler.start()
        await self.app(scope, receive, send)
