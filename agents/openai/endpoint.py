"""What every ``/v1`` view shares: the JSON body, OpenAI's errors, and following a run.

Views are async and never block on a run: a run's frames arrive on the event loop
(``RunService.follow_batches``), so a thousand waiting clients cost a thousand coroutines.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from functools import wraps
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from ..api.sse import HEARTBEAT_SECONDS
from ..runs import run_service
from .errors import OpenAIError, bad_request, error_response, server_error
from .outcome import Delta, Outcome

__all__ = [
    "KEEP_ALIVE",
    "UPSTREAM_FAILED",
    "FirstOutput",
    "collect",
    "event_stream",
    "json_body",
    "json_response",
    "openai_view",
]

logger = logging.getLogger(__name__)

KEEP_ALIVE = b": keep-alive\n\n"
UPSTREAM_FAILED = OpenAIError(
    502,
    "The model server failed to answer; try again.",
    type="server_error",
    code="upstream_error",
)
INTERNAL = server_error()

View = Callable[..., Coroutine[Any, Any, HttpResponseBase]]


def openai_view(*methods: str) -> Callable[[View], View]:
    """An async view under ``/v1``: its methods, its errors in OpenAI's shape, no CSRF (a
    bearer key is not ambient: no browser sends it on its own)."""

    def decorate(view: View) -> View:
        @wraps(view)
        async def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if request.method not in methods:
                response = error_response(
                    OpenAIError(
                        405,
                        f"Method {request.method} is not allowed here.",
                        code="method_not_allowed",
                    )
                )
                response["Allow"] = ", ".join(methods)
                return response
            try:
                return await view(request, *args, **kwargs)
            except OpenAIError as error:
                return error_response(error)
            except Exception:
                logger.exception("%s %s failed", request.method, request.path)
                return error_response(INTERNAL)

        return csrf_exempt(wrapped)

    return decorate


def json_body(request: HttpRequest) -> Mapping[str, Any]:
    """The request's JSON object (``OpenAIError`` 400 or 413)."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raise OpenAIError(413, "The request body is too large.", code="request_too_large") from None
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise bad_request(
            "We could not parse the JSON body of your request.", code="invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object.", code="invalid_json")
    return body


def json_response(body: Mapping[str, Any], status: int = 200) -> HttpResponseBase:
    return HttpResponse(
        json.dumps(body, ensure_ascii=False), status=status, content_type="application/json"
    )


def event_stream(chunks: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def collect(
    run_id: int, outcome: Outcome, then: Callable[[list[Delta]], object] | None = None
) -> Outcome:
    """Follow the run to its end, folding every frame into ``outcome`` (and its pieces of
    answer into ``then``)."""
    async for batch in run_service.follow_batches(run_id, idle=HEARTBEAT_SECONDS):
        for frame in batch or ():
            deltas = outcome.feed(frame)
            if then is not None and deltas:
                then(deltas)
    return outcome


class FirstOutput:
    """A run's frames, read until the first piece of answer before any response is sent.

    A stream whose model fails before it says anything can then still answer ``502``
    (a status cannot change once a stream began). A quiet run commits to streaming at the
    first keep-alive: the client sees headers, and comments keep its connection open.
    """

    def __init__(self, run_id: int, outcome: Outcome) -> None:
        self.outcome = outcome
        self.batches = run_service.follow_batches(run_id, idle=HEARTBEAT_SECONDS)
        self.ready: list[Delta] = []
        self.idle = False

    async def wait(self) -> None:
        """Read until some answer, a keep-alive, or the run's end."""
        async for batch in self.batches:
            if batch is None:
                self.idle = True
                return
            for frame in batch:
                self.ready.extend(self.outcome.feed(frame))
            if self.ready or self.outcome.finished:
                return

    async def rest(self) -> AsyncIterator[list[Delta] | None]:
        """The pieces after the first ones, batch by batch (``None``: a quiet stretch)."""
        async for batch in self.batches:
            if batch is None:
                yield None
                continue
            deltas: list[Delta] = []
            for frame in batch:
                deltas.extend(self.outcome.feed(frame))
            if deltas:
                yield deltas
