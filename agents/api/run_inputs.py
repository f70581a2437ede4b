"""``POST /api/runs/{id}/input/{request_id}/``: answering an MCP server's request for the
user's input (the chat answers with the ``respond`` frame).

A request shows in the run's events as an ``input`` frame (its ``requests``, each with its
``id``, ``message`` and form ``fields``, or a ``url``); it waits in the process running the run
until answered, timed out or withdrawn, and this answer reaches it from any process.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from orkestrel.protocol import INPUT_ACTIONS, FrameError, check_response

from ..runs import RunService
from ..runs.inputs import respond
from ..runs.records import owned_run
from . import examples
from .base import user_id
from .strict import StrictJson

__all__ = ["RunInputs"]

REQUEST_ID = "[0-9a-f]{32}"

ACCEPT = examples.example(
    "Accept a form, with its fields' values",
    {"action": "accept", "content": {"party": 4, "day": "2026-08-01", "seating": "outdoor"}},
)
DECLINE = examples.example("Decline", {"action": "decline"})
ANSWERED = examples.example(
    "Answered: the server's tool call goes on",
    {"id": "6f1c2b9a0d4e4f7a8b3c5d2e1f0a9b8c", "action": "accept", "by": "user"},
)
NO_REQUEST = examples.not_found(
    "no request for input '6f1c2b9a0d4e4f7a8b3c5d2e1f0a9b8c' waits for an answer",
    "No such request (answered, timed out or withdrawn)",
)
DOES_NOT_FIT = examples.invalid(
    "Content that does not fit the form (nothing reached the server; it still waits)",
    content=["the answer does not fit the form: 'Party size' must be a whole number"],
)


class InputAnswerSerializer(StrictJson, serializers.Serializer[Any]):
    """An answer to a server's request for input."""

    action = serializers.ChoiceField(
        choices=list(INPUT_ACTIONS),
        help_text="`accept` (a form: with `content`; a URL: the user opened it and is done), "
        "`decline`, or `cancel` (dismissed without choosing).",
    )
    content = serializers.DictField(
        required=False,
        allow_null=True,
        help_text="With `accept` on a form: each field's value by its `name` (text, number, "
        "boolean, one option's value, or a list of them), checked against the form.",
    )


class InputSettledSerializer(serializers.Serializer[Any]):
    """How the request ended."""

    id = serializers.CharField(help_text="The request's id.")
    action = serializers.ChoiceField(
        choices=list(INPUT_ACTIONS), help_text="What the server was told."
    )
    by = serializers.ChoiceField(
        choices=["user", "timeout", "run"], help_text="`user` here: your answer settled it."
    )


class RunInputs:
    """The run view set's answering of its servers' requests for input."""

    service: RunService

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "request_id",
                str,
                OpenApiParameter.PATH,
                pattern=REQUEST_ID,
                description="The request's `id`, from the run's `input` event.",
            )
        ],
        request=examples.body(InputAnswerSerializer, ACCEPT, DECLINE),
        responses={
            200: examples.answer(InputSettledSerializer, ANSWERED),
            **examples.refusals(DOES_NOT_FIT, examples.NO_RUN, NO_REQUEST),
        },
        summary="Answer an MCP server's request for your input",
        description=(
            "A tool call of the run waits on it: the server gets the answer and the call goes "
            "on. Every follower of the conversation gets the run's `input` event without it."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        # Any segment routes (a malformed id is a 404 like an unknown one, after the caller
        # is authenticated); the schema documents the id's form.
        url_path="input/(?P<request_id>[^/]+)",
        url_name="input",
    )
    def answer(self, request: Request, pk: str, request_id: str) -> Response:
        record = owned_run(user_id(request), int(pk))
        if record is None:
            raise NotFound("No such run.")
        body = InputAnswerSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            chosen, content = check_response(
                body.validated_data["action"], body.validated_data.get("content")
            )
        except FrameError as error:
            raise ValidationError({"content": [str(error)]}) from None
        settled = async_to_sync(respond)(
            self.service.manager,
            user_id=user_id(request),
            conversation_id=record.conversation_id,
            request_id=request_id,
            action=chosen,
            content=content,
            run_id=record.id,
        )
        return Response(settled)
