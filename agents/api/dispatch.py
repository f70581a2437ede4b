"""Where the API's run views run: on the database thread, with their waits on the event loop.

Django runs a sync view on a thread of the request's own, with a database connection of its own,
and a hop to the run service from there stays on that thread (asgiref sends a nested hop back
to its caller's thread, ``in_thread`` or not): 200 run starts at once were 200 threads and 200
SQLite connections queueing for the write lock. A view wrapped by ``on_database_thread`` is a
coroutine to Django and runs on the process's one database thread instead, as the websocket's
hops do; a handler that waits for the run service answers ``Deferred``, so the wait happens on
the event loop, holding no thread, and the answer is built on the database thread again (on
the loop, where it needs nothing of the database: ``Deferred.light``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from django.http import HttpResponseBase
from rest_framework.viewsets import ViewSetMixin

from orkestrel.db import in_thread

if TYPE_CHECKING:
    from rest_framework.decorators import ViewSetAction
    from rest_framework.views import APIView, AsView, GenericView

__all__ = ["DatabaseThreadRoutes", "Deferred", "on_database_thread"]


def _raise(error: Exception) -> Any:
    raise error


def _never(result: Any) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Deferred:
    """A handler's answer that first awaits ``work``; ``then`` gets a call that returns its
    result (or raises its error) and answers as a handler does (errors are DRF's to render).

    ``light`` says of a result whether answering it reads and writes nothing in the database
    (a started run's event stream): that answer is built on the event loop, saving a hop to
    the database thread, where a burst's starts queue.
    """

    view: APIView
    work: Awaitable[Any]
    then: Callable[[Callable[[], Any]], Any]
    light: Callable[[Any], bool] = _never

    async def resume(self) -> Any:
        try:
            result = await self.work
        except Exception as error:  # noqa: BLE001 - handed to ``then``, which maps it
            outcome = functools.partial(_raise, error)
        else:
            outcome = functools.partial(lambda value: value, result)
            if self.light(result):
                return self._respond(outcome)
        return await in_thread(self._respond)(outcome)

    def _respond(self, outcome: Callable[[], Any]) -> Any:
        view = self.view
        try:
            response = self.then(outcome)
        except Exception as error:  # noqa: BLE001 - DRF's dispatch does the same
            response = view.handle_exception(error)
        return view.finalize_response(view.request, response, *view.args, **view.kwargs)


def on_database_thread[V: Callable[..., Any]](view: V) -> V:
    """``view`` (a DRF view function) as a coroutine view run on the database thread."""
    threaded = in_thread(view)

    async def run(request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = await threaded(request, *args, **kwargs)
        while isinstance(response, Deferred):
            response = await response.resume()
        return response

    # DRF's attributes (``cls``, ``actions``, ``csrf_exempt``...) for routers and the schema.
    run.__dict__.update(view.__dict__)
    run.__name__ = getattr(view, "__name__", "view")
    run.__doc__ = view.__doc__
    return cast("V", run)


class DatabaseThreadRoutes(ViewSetMixin):
    """A viewset whose routes serving only ``database_thread`` actions run on the database
    thread (``on_database_thread``); the other routes stay on Django's thread per request."""

    database_thread: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def as_view(
        cls, actions: dict[str, str | ViewSetAction] | None = None, **initkwargs: Any
    ) -> AsView[GenericView]:
        view = super().as_view(actions, **initkwargs)
        names = {
            name if isinstance(name, str) else name.__name__ for name in (actions or {}).values()
        }
        if names and names <= cls.database_thread:
            return on_database_thread(view)
        return view
