"""``/api/schedules/``: the user's schedules (a job on a cron, a webhook, or now), and their runs.

``GET``/``POST /api/schedules/``, ``GET``/``PATCH``/``DELETE /api/schedules/<id>/``: the
user's own; another user's is a 404. ``POST`` answers 201 with the webhook's ``secret``, its
only appearance. ``POST /api/schedules/<id>/run/`` starts it now (202, its job);
``GET /api/schedules/<id>/runs/`` is its history, newest first, each start with its job (or
the error that kept it from starting); a start still in flight is listed once its job is.
"""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter

from orkestrel.cron import CronError, time_zone, validate_cron

from ..models import Schedule, ScheduleRun
from ..schedules import Firing, ProfileUnavailable, start_schedule
from . import examples
from . import schedule_examples as given
from .base import JsonErrors, user_id
from .errors import Conflict
from .jobs import JobSerializer, UsableProfileField
from .strict import StrictJson

__all__ = ["ScheduleSerializer", "ScheduleViewSet", "urlpatterns"]


class ScheduleSerializer(StrictJson, serializers.ModelSerializer[Schedule]):
    """A schedule: what its job asks, when the cron starts it, and where its webhook is."""

    profile = UsableProfileField(
        slug_field="slug",
        help_text="An enabled profile's slug, which the user may use.",
        error_messages={"does_not_exist": "No enabled agent profile is named {value}."},
    )
    webhook_url = serializers.SerializerMethodField(
        help_text="POST here, signed with the secret (`X-Orkestrel-Signature`), to start it."
    )

    class Meta:
        model = Schedule
        fields = [
            "id",
            "name",
            "profile",
            "prompt",
            "cron",
            "timezone",
            "enabled",
            "next_run",
            "last_run",
            "webhook_url",
            "created",
            "updated",
        ]
        read_only_fields = ["id", "next_run", "last_run", "created", "updated"]

    @extend_schema_field(OpenApiTypes.URI)
    def get_webhook_url(self, schedule: Schedule) -> str:
        path = reverse("schedule-hook", args=[schedule.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def validate_cron(self, value: str) -> str:
        try:
            return validate_cron(value)
        except CronError as error:
            raise serializers.ValidationError(str(error), code=error.code) from None

    def validate_timezone(self, value: str) -> str:
        try:
            time_zone(value)
        except CronError as error:
            raise serializers.ValidationError(str(error), code=error.code) from None
        return value

    def validate_prompt(self, value: str) -> str:
        limit = settings.ORKESTREL["MAX_MESSAGE_CHARS"]
        if len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="max_length"
            )
        return value

    def create(self, validated_data: dict[str, Any]) -> Schedule:
        schedule = Schedule(user_id=user_id(self.context["request"]), **validated_data)
        schedule.plan(timezone.now())
        schedule.save()
        return schedule

    def update(self, instance: Schedule, validated_data: dict[str, Any]) -> Schedule:
        for name, value in validated_data.items():
            setattr(instance, name, value)
        instance.plan(timezone.now())
        instance.save()
        return instance


class CreatedScheduleSerializer(ScheduleSerializer):
    """A schedule just created: as listed, plus its webhook's ``secret``, shown this once."""

    secret = serializers.CharField(
        read_only=True, help_text="The webhook's signing secret; it is not shown again."
    )

    class Meta(ScheduleSerializer.Meta):
        fields = [*ScheduleSerializer.Meta.fields, "secret"]


class ScheduleRunSerializer(serializers.ModelSerializer[ScheduleRun]):
    """One start of the schedule: what started it and its job (``null``: none was made)."""

    job = JobSerializer(allow_null=True, read_only=True)

    class Meta:
        model = ScheduleRun
        fields = ["id", "trigger", "due", "error", "created", "job"]
        read_only_fields = fields


class NewestFirst(CursorPagination):
    ordering = ("-created", "-id")


@extend_schema_view(
    list=extend_schema(
        summary="The user's schedules, newest first",
        responses=examples.answer(ScheduleSerializer, given.SCHEDULE),
    ),
    retrieve=extend_schema(
        summary="A schedule",
        responses={
            200: examples.answer(ScheduleSerializer, given.SCHEDULE),
            **examples.refusals(given.NO_SCHEDULE),
        },
    ),
    partial_update=extend_schema(
        summary="Change a schedule (its cron is planned again)",
        request=examples.body(ScheduleSerializer, given.PAUSE),
        responses={
            200: examples.answer(ScheduleSerializer, given.PAUSED),
            **examples.refusals(given.NO_SCHEDULE, given.SCHEDULE_INVALID),
        },
    ),
    destroy=extend_schema(
        summary="Delete a schedule (its jobs stay)",
        responses={204: None, **examples.refusals(given.NO_SCHEDULE)},
    ),
)
class ScheduleViewSet(
    JsonErrors,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet[Schedule],
):
    """The user's schedules: a job (profile, prompt) on a cron in a time zone."""

    serializer_class = ScheduleSerializer
    pagination_class = NewestFirst
    lookup_value_converter = "uuid"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Schedule]:
        return Schedule.objects.filter(user_id=user_id(self.request)).select_related("profile")

    def get_object(self) -> Schedule:
        """The user's schedule (another user's is absent: 404)."""
        found = self.get_queryset().filter(pk=self.kwargs["pk"]).first()
        if found is None:
            raise NotFound("No such schedule.")
        return found

    @extend_schema(
        summary="Create a schedule",
        description=(
            "Answers `201` with the schedule and its webhook's `secret`, shown this once. "
            "The cron (five fields) is read in `timezone`; `next_run` says when it is due."
        ),
        request=examples.body(ScheduleSerializer, given.NEW_SCHEDULE),
        responses={
            201: examples.answer(CreatedScheduleSerializer, given.CREATED_SCHEDULE),
            **examples.refusals(given.SCHEDULE_INVALID),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = ScheduleSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        schedule = serializer.save()
        body = {**serializer.data, "secret": schedule.webhook_secret()}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Run a schedule now",
        description=(
            "Starts its job now, enabled or not (`202`, the job; poll `GET /api/jobs/{id}/`). "
            "A `409` when its profile is disabled or no longer usable by the user."
        ),
        request=None,
        responses={
            202: examples.answer(JobSerializer, given.STARTED),
            **examples.refusals(given.NO_SCHEDULE, given.PROFILE_UNAVAILABLE),
        },
    )
    @action(detail=True, methods=["post"])
    def run(self, request: Request, pk: uuid.UUID) -> Response:
        schedule = self.get_object()
        firing = Firing.of(schedule, ScheduleRun.Trigger.RUN_NOW)
        try:
            started = async_to_sync(start_schedule)(firing)
        except ProfileUnavailable as error:
            raise Conflict(str(error), code=error.code) from None
        response = Response(JobSerializer(started.job).data, status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("api-job-detail", args=[started.job.pk])
        return response

    @extend_schema(
        summary="A schedule's runs, newest first",
        responses={
            200: examples.answer(ScheduleRunSerializer(many=True), given.SCHEDULE_RUNS),
            **examples.refusals(given.NO_SCHEDULE),
        },
    )
    @action(detail=True, methods=["get"])
    def runs(self, request: Request, pk: uuid.UUID) -> Response:
        schedule = self.get_object()
        # A start in flight (its row claimed, its job not yet linked) is not history yet.
        found = (
            ScheduleRun.objects.filter(schedule=schedule)
            .exclude(job__isnull=True, error="")
            .select_related("job__profile")
        )
        page = self.paginate_queryset(found)
        return self.get_paginated_response(ScheduleRunSerializer(page, many=True).data)


router = SimpleRouter(use_regex_path=False)
router.register("", ScheduleViewSet, basename="api-schedule")

urlpatterns = router.urls
