"""``/api/jobs/``: enqueue an agent job, read its status and result, cancel it.

``POST /api/jobs/`` answers 202 with the job once it is stored (it runs on a Celery worker when
a broker is configured, else in the server process, and survives a restart);
``GET /api/jobs/`` lists the user's jobs, newest first; ``GET /api/jobs/<id>/`` is one job;
``POST /api/jobs/<id>/cancel/`` cancels it (409 once it has settled). Another user's job is a
404, as if it did not exist.
"""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter

from conversations.services import default_profile, enabled_profiles

from ..jobs import JobRequest, JobSettled, job_service
from ..models import AgentJob, AgentProfile
from ..runtime.caps import MAX_BUDGET, AboveCap, Bounds, Caps
from ..runtime.progress import Progress, ProgressPayload
from . import examples
from .base import JsonErrors, user_id
from .errors import Conflict
from .serializers import UsageSerializer
from .strict import StrictJson

__all__ = ["JobCreateSerializer", "JobSerializer", "JobViewSet", "urlpatterns"]

# Bounds of any request; the profile's own bounds cap them further (``runtime.caps``).
MAX_JOB_MESSAGES = 500
MAX_LIMIT = 100
MAX_TIMEOUT = 3600.0
MAX_RETRIES = 5
ROLES = ("user", "assistant")


# -- strict JSON types: ``"3"`` is not a number, ``1`` is not a boolean --------------------------


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return float(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


# -- request ---------------------------------------------------------------------------------


class JobMessageSerializer(serializers.Serializer[Any]):
    """One input message: who said it and what."""

    role = serializers.ChoiceField(choices=ROLES)
    content = StrictCharField(allow_blank=True, trim_whitespace=False)

    def validate_content(self, value: str) -> str:
        limit = settings.ORKESTREL["MAX_MESSAGE_CHARS"]
        if len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="max_length"
            )
        return value


@extend_schema_field(OpenApiTypes.STR)
class UsableProfileField(serializers.SlugRelatedField[AgentProfile]):
    """A profile slug among those the requesting user may use."""

    def get_queryset(self) -> QuerySet[AgentProfile]:
        request = self.context.get("request")
        return enabled_profiles(request.user.pk if request is not None else None)


class JobCreateSerializer(StrictJson, serializers.Serializer[Any]):
    """A job: a profile, the input messages, an optional system prompt and run options.

    Omitted options (or ``null``) take the profile's own: its step limit, timeout and
    token budget. Given ones may lower the profile's, never raise them: one above its cap is
    a field error naming the cap. ``system`` is added after the profile's system prompt.
    """

    profile = UsableProfileField(
        slug_field="slug",
        required=False,
        help_text="An enabled profile's slug (the default profile when omitted).",
        error_messages={"does_not_exist": "No enabled agent profile is named {value}."},
    )
    messages = JobMessageSerializer(many=True, allow_empty=False)
    system = StrictCharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    limit = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_LIMIT,
        help_text="Most turns; at most the profile's step limit.",
    )
    timeout = StrictFloatField(
        required=False,
        allow_null=True,
        max_value=MAX_TIMEOUT,
        help_text="Seconds (> 0); at most the profile's timeout.",
    )
    budget = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_BUDGET,
        help_text="Most tokens (total); at most the profile's token budget, when it has one.",
    )
    allow_partial = StrictBooleanField(
        required=False, default=False, help_text="A cancelled or exhausted run is a result."
    )
    retries = StrictIntegerField(
        required=False, default=0, min_value=0, max_value=MAX_RETRIES, help_text="After failures."
    )

    def validate_messages(self, value: list[dict[str, str]]) -> list[dict[str, str]]:
        if len(value) > MAX_JOB_MESSAGES:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {MAX_JOB_MESSAGES} elements.",
                code="max_length",
            )
        return value

    def validate_timeout(self, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise serializers.ValidationError("Must be a positive number of seconds.")
        return value

    def validate_system(self, value: str | None) -> str | None:
        limit = settings.ORKESTREL["MAX_MESSAGE_CHARS"]
        if value is not None and len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="max_length"
            )
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("profile") is None:
            request = self.context.get("request")
            profile = default_profile(request.user.pk if request is not None else None)
            if profile is None:
                raise serializers.ValidationError(
                    {"profile": ["No enabled agent profile; an operator must create one."]}
                )
            attrs["profile"] = profile
        asked = Bounds(
            limit=attrs.get("limit"), timeout=attrs.get("timeout"), budget=attrs.get("budget")
        )
        try:
            Caps.of(attrs["profile"]).check(asked)
        except AboveCap as error:
            raise serializers.ValidationError(
                {excess.bound: [excess.message] for excess in error.excesses}, code=error.code
            ) from None
        return attrs


# -- response --------------------------------------------------------------------------------


class JobOptionsSerializer(serializers.Serializer[Any]):
    limit = serializers.IntegerField(allow_null=True, help_text="null: the profile's.")
    timeout = serializers.FloatField(allow_null=True, help_text="null: the profile's.")
    budget = serializers.IntegerField(allow_null=True, help_text="null: the profile's.")
    allow_partial = serializers.BooleanField()
    retries = serializers.IntegerField()


# ``partial`` would shadow ``Serializer.partial`` as a declared field: described inline.
JOB_RESULT = inline_serializer(
    "JobResult",
    fields={
        "content": serializers.CharField(),
        "thinking": serializers.CharField(allow_null=True),
        "usage": UsageSerializer(allow_null=True),
        "partial": serializers.BooleanField(),
        "stop": serializers.ChoiceField(choices=["done", "abort", "exhaust"]),
    },
    allow_null=True,
)


class JobErrorSerializer(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="e.g. partial, provider, profile_unavailable.")
    message = serializers.CharField()


class JobProgressSerializer(serializers.Serializer[Any]):
    turns = serializers.IntegerField(help_text="Model requests the current attempt made.")
    tools = serializers.IntegerField(help_text="Tool calls it ran.")
    last_tool = serializers.CharField(help_text="The latest tool it called (empty: none).")
    tokens = serializers.IntegerField(help_text="Tokens it used.")
    text = serializers.CharField(help_text="The end of its answer so far (up to 200 chars).")


class JobSerializer(serializers.ModelSerializer[AgentJob]):
    """A job: its status, attempts, times, how far it got (``progress``: written with each
    heartbeat while it runs, kept once it settled), and its result or error once settled."""

    profile = serializers.SerializerMethodField()
    options = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = AgentJob
        fields = [
            "id",
            "profile",
            "status",
            "attempts",
            "options",
            "cancel_requested",
            "created",
            "started",
            "finished",
            "result",
            "error",
            "parent",
            "depth",
            "progress",
        ]
        read_only_fields = fields

    def get_profile(self, job: AgentJob) -> str:
        """The profile's slug as the job named it."""
        return str(job.job.get("provider", ""))

    @extend_schema_field(JobOptionsSerializer)
    def get_options(self, job: AgentJob) -> dict[str, Any]:
        return {
            "limit": job.job.get("limit"),
            "timeout": job.job.get("timeout"),
            "budget": job.job.get("budget"),
            "allow_partial": job.allow_partial,
            "retries": job.retries,
        }

    @extend_schema_field(JOB_RESULT)
    def get_result(self, job: AgentJob) -> dict[str, Any] | None:
        return job.result

    @extend_schema_field(JobProgressSerializer)
    def get_progress(self, job: AgentJob) -> ProgressPayload:
        return Progress.of(job.progress).payload()

    @extend_schema_field(JobErrorSerializer(allow_null=True))
    def get_error(self, job: AgentJob) -> dict[str, str] | None:
        if job.status != AgentJob.Status.ERROR:
            return None
        return {"code": job.error_code, "message": job.error}


# -- views -----------------------------------------------------------------------------------


class NewestFirst(CursorPagination):
    ordering = ("-created", "-id")


def _job(request: Request, pk: uuid.UUID) -> AgentJob:
    try:
        return async_to_sync(job_service.get)(user_id=user_id(request), job_id=str(pk))
    except LookupError:
        raise NotFound("No such job.") from None


class JobViewSet(JsonErrors, viewsets.GenericViewSet[AgentJob]):
    """The user's agent jobs, newest first."""

    serializer_class = JobSerializer
    pagination_class = NewestFirst
    lookup_value_converter = "uuid"

    def get_queryset(self) -> QuerySet[AgentJob]:
        return async_to_sync(job_service.jobs)(user_id=user_id(self.request))

    @extend_schema(
        summary="The user's jobs, newest first",
        responses=examples.answer(JobSerializer, examples.JOB_DONE),
    )
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(JobSerializer(page, many=True).data)

    @extend_schema(
        summary="Enqueue an agent job",
        description=(
            "Stores the job, then runs it (on a Celery worker when a broker is configured, "
            "else in the server process) with the profile's provider, tools, authority, scope "
            "and instructions. Answers `202` with the job once it is stored; poll "
            "`GET /api/jobs/{id}/` for its result. A job survives a server or worker restart: "
            "it runs again from its last attempt. `limit`, `timeout` and `budget` may lower the "
            "profile's step limit, timeout and token budget, never raise them: a value above "
            "the profile's is a `400` naming its cap."
        ),
        request=examples.body(JobCreateSerializer, examples.NEW_JOB),
        responses={
            202: examples.answer(JobSerializer, examples.JOB_QUEUED),
            **examples.refusals(examples.JOB_INVALID),
        },
    )
    def create(self, request: Request) -> Response:
        serializer = JobCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        job = async_to_sync(job_service.enqueue)(
            user_id=user_id(request), request=JobRequest(**serializer.validated_data)
        )
        response = Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("api-job-detail", args=[job.pk])
        return response

    @extend_schema(
        summary="A job: status, attempts, result or error",
        responses={
            200: examples.answer(
                JobSerializer, examples.JOB_DONE, examples.JOB_QUEUED, examples.JOB_FAILED
            ),
            **examples.refusals(examples.NO_JOB),
        },
    )
    def retrieve(self, request: Request, pk: uuid.UUID) -> Response:
        return Response(JobSerializer(_job(request, pk)).data)

    @extend_schema(
        request=None,
        responses={
            202: examples.answer(JobSerializer, examples.JOB_CANCELLING),
            **examples.refusals(examples.NO_JOB, examples.JOB_SETTLED),
        },
        summary="Cancel a job",
        description=(
            "A queued job is cancelled at once; a running one is stopped by the process "
            "running it (`cancel_requested` until it settles as `cancelled`)."
        ),
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: uuid.UUID) -> Response:
        try:
            job = async_to_sync(job_service.cancel)(user_id=user_id(request), job_id=str(pk))
        except LookupError:
            raise NotFound("No such job.") from None
        except JobSettled:
            raise Conflict("The job has settled already.", code="settled") from None
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


router = SimpleRouter(use_regex_path=False)
router.register("", JobViewSet, basename="api-job")

urlpatterns = router.urls
