"""``/api/questions/``: what the model asked the user (``ask_user``), and answering it."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Question
from conversations.questions import QuestionRefused, question_payload, user_questions

from ..runs.questions import answer
from . import examples
from .base import JsonErrors, user_id
from .errors import Conflict
from .strict import StrictJson

__all__ = ["QuestionViewSet"]

STATUSES = ("pending", "answered", "expired", "all")

QUESTION_VALUE: dict[str, Any] = {
    "id": 3,
    "call_id": "call_5",
    "question": "Which format should the report use?",
    "choices": ["PDF", "Markdown"],
    "free_text": False,
    "status": "pending",
    "answer": None,
    "run": 41,
    "conversation": examples.CONVERSATION_ID,
    "created": "2026-12-01T16:05:00Z",
    "expires": None,
    "answered": None,
    "answered_by": None,
}
QUESTION = examples.example("A question waiting for you", QUESTION_VALUE)
ANSWERED = examples.example(
    "Answered; the run goes on",
    {
        **QUESTION_VALUE,
        "status": "answered",
        "answer": "PDF",
        "answered": "2026-12-01T16:06:00Z",
        "answered_by": "alice",
        "continued_by": 42,
    },
)
ANSWER = examples.example("One of the choices", {"answer": "PDF"})
NO_QUESTION = examples.not_found("No such question.")
BAD_ANSWER = examples.invalid(
    "Not one of the choices", answer=["the answer must be one of the choices: ['PDF', 'Markdown']"]
)
ANSWERED_ALREADY = examples.Refusal(
    status=409,
    name="Answered already",
    detail="this question was answered already",
    code="answered",
)


class QuestionSerializer(serializers.Serializer[Any]):
    """A question the model asked you, and your answer once given."""

    id = serializers.IntegerField()
    call_id = serializers.CharField(help_text="The model's `ask_user` call id.")
    question = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField(), help_text="May be empty.")
    free_text = serializers.BooleanField(help_text="Whether an answer outside `choices` is taken.")
    status = serializers.ChoiceField(choices=["pending", "answered", "expired"])
    answer = serializers.CharField(allow_null=True)
    run = serializers.IntegerField(help_text="The run that paused on the question.")
    conversation = serializers.UUIDField()
    created = serializers.DateTimeField()
    expires = serializers.DateTimeField(
        allow_null=True, help_text="When the model is told no answer came (null: never)."
    )
    answered = serializers.DateTimeField(allow_null=True)
    answered_by = serializers.CharField(allow_null=True)


class AnsweredSerializer(QuestionSerializer):
    """An answered question, and the run that goes on after it."""

    continued_by = serializers.IntegerField(
        allow_null=True,
        help_text="The run that goes on with the answer (follow it at "
        "`/api/runs/{id}/events/`); null while something else of its run still waits.",
    )


class AnswerSerializer(StrictJson, serializers.Serializer[Any]):
    """An answer: one of the choices, or free text where the question takes it."""

    answer = serializers.CharField(max_length=10_000)


class NewestFirst(CursorPagination):
    ordering = ("-created", "-id")


@extend_schema_view(
    list=extend_schema(
        summary="The questions the model asked you (newest first)",
        parameters=[
            OpenApiParameter(
                "status", str, enum=list(STATUSES), description="pending (default), ... or all."
            )
        ],
        responses={
            200: examples.answer(QuestionSerializer(many=True), QUESTION),
            **examples.refusals(
                examples.invalid("An unknown status", status=["Must be one of ..."])
            ),
        },
    ),
    retrieve=extend_schema(
        summary="One question",
        responses={
            200: examples.answer(QuestionSerializer, QUESTION),
            **examples.refusals(NO_QUESTION),
        },
    ),
)
class QuestionViewSet(JsonErrors, viewsets.GenericViewSet[Question]):
    """Questions the model asked (its ``ask_user`` tool) on the user's conversations."""

    serializer_class = QuestionSerializer
    pagination_class = NewestFirst
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Question]:
        wanted = self.request.query_params.get("status", "pending")
        if wanted not in STATUSES:
            raise ValidationError({"status": [f"Must be one of {', '.join(STATUSES)}."]})
        return user_questions(user_id(self.request), None if wanted == "all" else wanted)

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([question_payload(row) for row in page or []])

    def retrieve(self, request: Request, pk: str) -> Response:
        row = user_questions(user_id(request), None).filter(pk=int(pk)).first()
        if row is None:
            raise NotFound("No such question.")
        return Response(question_payload(row))

    @extend_schema(
        request=examples.body(AnswerSerializer, ANSWER),
        responses={
            200: examples.answer(AnsweredSerializer, ANSWERED),
            **examples.refusals(BAD_ANSWER, NO_QUESTION, ANSWERED_ALREADY),
        },
        summary="Answer a question the model asked",
        description=(
            "The answer is the model's `ask_user` result: once nothing else of its run waits, "
            "the conversation goes on in a new run, named by `continued_by` (with `Location`). "
            "Every tab of the chat sees the answer."
        ),
    )
    @action(detail=True, methods=["post"])
    def answer(self, request: Request, pk: str) -> Response:
        data = request.data
        if not isinstance(data, dict):
            raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
        try:
            answered = async_to_sync(answer)(
                self.service.manager,
                user_id=user_id(request),
                username=request.user.get_username(),
                question_id=int(pk),
                answer=data.get("answer"),
            )
        except LookupError:
            raise NotFound("No such question.") from None
        except QuestionRefused as error:
            if error.code == "invalid":
                raise ValidationError({"answer": [str(error)]}) from None
            raise Conflict(str(error), code="answered") from None
        body = {**answered.question, "continued_by": answered.continued_by}
        response = Response(body, status=status.HTTP_200_OK)
        if answered.continued_by is not None:
            response["Location"] = reverse("api-run-detail", args=[answered.continued_by])
        return response
