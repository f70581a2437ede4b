"""``/api/runs/``: a run's status and result, cancelling it, and following its events."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from ..runs import Busy, RunRecord, run_service
from ..runs.records import owned_run
from . import examples
from .base import JsonErrors, user_id
from .dispatch import DatabaseThreadRoutes
from .errors import Conflict
from .events import EVENT_STREAM_RESPONSE
from .serializers import RunSerializer
from .sse import HEARTBEAT_SECONDS, EventStreamRenderer, event_stream

__all__ = ["RunViewSet", "run_body", "settled_body", "started_body"]


def _record(request: Request, run_id: int | str) -> RunRecord:
    try:
        key = int(run_id)
    except (TypeError, ValueError):
        raise NotFound("No such run.") from None
    try:
        return async_to_sync(run_service.get)(user_id=user_id(request), run_id=key)
    except LookupError:
        raise NotFound("No such run.") from None


def run_body(request: Request, run_id: int) -> dict[str, Any]:
    """The run as the API shows it; a live run's answer is read from memory, not a checkpoint."""
    return _body(_record(request, run_id))


def started_body(request: Request, run_id: int) -> dict[str, Any]:
    """``run_body`` of a run this request has just started or touched, read here in one query:
    the start has the run service going, so no hop to it is needed (``run_body``'s
    ``async_to_sync`` from this thread costs more than the read)."""
    record = owned_run(user_id(request), run_id)
    if record is None:
        raise NotFound("No such run.")
    return _body(record)


async def settled_body(user: int, run_id: int) -> dict[str, Any]:
    """The run's body once it has settled (awaited on the event loop, not in a view)."""
    await run_service.wait(run_id)
    return _body(await run_service.get(user_id=user, run_id=run_id))


def _body(record: RunRecord) -> dict[str, Any]:
    body = dict(RunSerializer(record).data)
    active = run_service.manager.run(record.id)
    if active is not None and not active.settled:
        body.update(content=active.content, thinking=active.thinking)
    return body


class RunViewSet(JsonErrors, DatabaseThreadRoutes, viewsets.ViewSet):
    """Runs of the user's conversations; reading and following one is on the database thread."""

    lookup_value_regex = "[0-9]+"
    database_thread = frozenset({"retrieve", "events"})

    @extend_schema(
        responses={
            200: examples.answer(RunSerializer, examples.RUN),
            **examples.refusals(examples.NO_RUN),
        }
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(run_body(request, int(pk)))

    @extend_schema(
        request=None,
        responses={
            202: examples.answer(RunSerializer, examples.CANCELLED),
            **examples.refusals(examples.NO_RUN, examples.NOT_RUNNING),
        },
        summary="Stop a running run (its partial answer is kept)",
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        record = _record(request, pk)
        if not async_to_sync(self.service.cancel_run)(record):
            raise Conflict("The run is not running.", code="not_running")
        return Response(started_body(request, record.id), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=None,
        responses={
            202: examples.answer(RunSerializer, examples.RETRIED),
            **examples.refusals(examples.NO_RUN, examples.NOT_RETRYABLE, examples.BUSY),
        },
        summary="Retry a failed, stopped or interrupted run",
        description=(
            "Starts a new run on the conversation as it stands (the partial answer kept): the "
            "model answers again, or goes on from where it was cut."
        ),
    )
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str) -> Response:
        record = _record(request, pk)
        try:
            handle = async_to_sync(self.service.retry)(user_id=user_id(request), record=record)
        except Busy as error:
            raise Conflict(str(error)) from None
        except ValueError as error:
            raise Conflict(str(error), code="not_retryable") from None
        response = Response(started_body(request, handle.id), status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("api-run-detail", args=[handle.id])
        return response

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "Last-Event-ID",
                int,
                OpenApiParameter.HEADER,
                description="Resume after this event id (a frame's seq).",
            ),
            OpenApiParameter("after", int, description="The same as Last-Event-ID."),
        ],
        responses={
            (200, "text/event-stream"): EVENT_STREAM_RESPONSE,
            **examples.refusals(examples.AFTER_INVALID, examples.NO_RUN),
        },
        summary="Follow the run's events (Server-Sent Events)",
    )
    @action(detail=True, methods=["get"], renderer_classes=[EventStreamRenderer, JSONRenderer])
    def events(self, request: Request, pk: str) -> Any:
        record = _record(request, pk)
        after = request.headers.get("Last-Event-ID") or request.query_params.get("after") or "0"
        try:
            seq = int(after)
        except ValueError:
            raise ValidationError({"after": ["Must be an event id (an integer)."]}) from None
        if seq < 0:
            raise ValidationError({"after": ["Must be at least 0."]})
        return event_stream(
            self.service.follow_batches(record.id, after=seq, idle=HEARTBEAT_SECONDS)
        )
