"""``/api/runs/``: the user's runs (filtered, newest first), a run's status and result,
cancelling it, and following its events; and the answers of a queued message (``wait``,
its event stream), which follow the conversation's runs to the one that took it."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Run
from orkestrel.protocol import MessagePayload

from ..runs import RunRecord, run_service
from ..runs.records import owned_run
from ..runs.sequence import Awaited, Position, run_of_conversation
from . import examples
from .base import JsonErrors, user_id
from .dispatch import DatabaseThreadRoutes
from .errors import Conflict
from .events import EVENT_STREAM_RESPONSE
from .run_inputs import RunInputs
from .serializers import RunSerializer
from .sse import HEARTBEAT_SECONDS, EventStreamRenderer, event_stream

__all__ = [
    "RunViewSet",
    "answer_stream",
    "answered_body",
    "conversation_events",
    "conversation_event_id",
    "run_body",
    "settled_body",
    "started_body",
]


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


def conversation_event_id(frame: dict[str, Any]) -> str:
    """A frame's id in a stream of several runs (opaque to clients: ``<run>.<seq>``)."""
    return str(Position(int(frame["run"]), int(frame["seq"])))


def conversation_events(request: Request, conversation_id: str) -> StreamingHttpResponse:
    """``GET /api/conversations/{id}/events/`` (the conversation is the user's): its runs'
    frames from after ``Last-Event-ID`` (or ``?after=``), else from the run going now."""
    after = request.headers.get("Last-Event-ID") or request.query_params.get("after")
    start = None
    if after:
        try:
            start = Position.parse(after)
        except ValueError:
            start = None
        if start is None or not run_of_conversation(conversation_id, start.run):
            message = "Must be an event id this stream gave (of this conversation's runs)."
            raise ValidationError({"after": [message]})
    frames = run_service.follow_conversation(conversation_id, after=start, idle=HEARTBEAT_SECONDS)
    return event_stream(frames, ids=conversation_event_id)


def answer_stream(conversation_id: str, awaited: Awaited) -> StreamingHttpResponse:
    """A queued message's answer as SSE: the going run's frames from the send on, then each
    run after it to the end of the one that took the message (ids as the conversation's
    event stream gives them: a client resumes there with ``Last-Event-ID``)."""
    frames = run_service.follow_answer(conversation_id, awaited, idle=HEARTBEAT_SECONDS)
    return event_stream(frames, ids=conversation_event_id)


async def answered_body(user: int, conversation_id: str, awaited: Awaited) -> dict[str, Any]:
    """A queued message's answer once settled: the run that took it, with the stored user
    message that carries it (merged with the others that waited)."""
    run, message = awaited.run, None
    frames = run_service.follow_answer(conversation_id, awaited, idle=HEARTBEAT_SECONDS)
    async for batch in frames:
        for frame in batch or ():
            if frame.get("run") is None:
                continue  # a refused start: the message still waits for a run
            run = frame["run"]
            if message is None:
                message = _taken(frame, awaited)
    if run is None:
        # Taken back (``DELETE …/pending/``) before any run took it: nothing answers it.
        return {"pending": [], "run": None}
    return {**await settled_body(user, run), "message": message}


def _taken(frame: dict[str, Any], awaited: Awaited) -> MessagePayload | None:
    """The user message a frame shows its run taking the awaited message in, if it does (the
    first such frame after the send: a take carries every message waiting then)."""
    earlier = frame["run"] == awaited.run
    if frame["type"] == "started" and not earlier:
        message: MessagePayload | None = frame.get("message")
        return message
    if frame["type"] == "committed" and not (earlier and frame["seq"] <= (awaited.after or 0)):
        users = [m for m in frame.get("messages", ()) if m.get("role") == "user"]
        return users[0] if users else None
    return None


def _body(record: RunRecord) -> dict[str, Any]:
    body = dict(RunSerializer(record).data)
    active = run_service.manager.run(record.id)
    if active is not None and not active.settled:
        body.update(content=active.content, thinking=active.thinking)
    return body


def _listed(run: Run) -> RunRecord:
    return RunRecord.of(run)


class NewestFirst(CursorPagination):
    ordering = ("-created", "-id")


class RunFilterSerializer(serializers.Serializer[Any]):
    """The run list's filters."""

    conversation = serializers.UUIDField(required=False)
    status = serializers.ChoiceField(
        choices=[choice for choice, _ in Run.Status.choices], required=False
    )


class RunViewSet(RunInputs, JsonErrors, DatabaseThreadRoutes, viewsets.GenericViewSet[Run]):
    """Runs of the user's conversations; reading and following one is on the database thread;
    answering its servers' requests for input (``RunInputs``)."""

    lookup_value_regex = "[0-9]+"
    database_thread = frozenset({"retrieve", "events"})
    pagination_class = NewestFirst
    # For the schema only (the id is an integer); ``get_queryset`` is what the list uses.
    queryset = Run.objects.none()

    def get_queryset(self) -> QuerySet[Run]:
        return Run.objects.filter(conversation__owner_id=user_id(self.request)).defer(
            "events", "request"
        )

    def written_conversation(self) -> str | None:
        """The conversation of the run a write acts on (a retry, a cancel), for an API key's
        ``profiles`` (``ScopedKey``)."""
        pk = str(self.kwargs.get("pk", ""))
        if not pk.isdigit():
            return None
        found = self.get_queryset().filter(pk=int(pk)).values_list("conversation_id", flat=True)
        conversation = found.first()
        return None if conversation is None else str(conversation)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "conversation",
                str,
                description="Only this conversation's runs (a conversation of someone else's, "
                "or none, lists nothing).",
            ),
            OpenApiParameter(
                "status",
                str,
                enum=[choice for choice, _ in Run.Status.choices],
                description="Only runs with this status.",
            ),
        ],
        responses={
            200: examples.answer(RunSerializer(many=True), examples.LISTED_RUN),
            **examples.refusals(examples.RUN_FILTER_INVALID),
        },
        summary="The user's runs, newest first",
    )
    def list(self, request: Request) -> Response:
        # DRF reads a blank query parameter as an absent one; the schema has no blank filter.
        blank = [
            name for name in ("conversation", "status") if request.query_params.get(name) == ""
        ]
        if blank:
            raise ValidationError({name: ["This filter may not be blank."] for name in blank})
        filters = RunFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        runs = self.get_queryset()
        if "conversation" in filters.validated_data:
            runs = runs.filter(conversation_id=filters.validated_data["conversation"])
        if "status" in filters.validated_data:
            runs = runs.filter(status=filters.validated_data["status"])
        page = self.paginate_queryset(runs)
        assert page is not None  # the view always paginates
        return self.get_paginated_response([_body(_listed(run)) for run in page])

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
        except ValueError as error:  # a ``Busy`` is answered by the API's exception handler
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
        # A header sent blank is no event id (the schema types it as one): refused, not ignored.
        header = request.headers.get("Last-Event-ID")
        after = header if header is not None else request.query_params.get("after") or "0"
        try:
            seq = int(after)
        except ValueError:
            raise ValidationError({"after": ["Must be an event id (an integer)."]}) from None
        if seq < 0:
            raise ValidationError({"after": ["Must be at least 0."]})
        return event_stream(
            self.service.follow_batches(record.id, after=seq, idle=HEARTBEAT_SECONDS)
        )
