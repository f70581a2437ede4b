"""``/api/approvals/``: the user's tool calls that wait for a decision, and deciding them."""

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

from conversations.approvals import (
    Decision,
    approval_payload,
    user_approvals,
)
from conversations.models import ToolApproval
from orkestrel.protocol import FrameError, check_decision

from . import examples
from .base import JsonErrors, user_id
from .strict import StrictJson

__all__ = ["ApprovalViewSet"]

STATUSES = ("pending", "approved", "denied", "expired", "all")


class ApprovalSerializer(serializers.Serializer[Any]):
    """A tool call held for a person's decision, and that decision once taken."""

    id = serializers.IntegerField()
    call_id = serializers.CharField(help_text="The model's tool call id.")
    tool = serializers.CharField()
    arguments = serializers.JSONField(help_text="The call's arguments (edited, once approved).")
    parameters = serializers.JSONField(
        allow_null=True, help_text="The tool's argument schema: edited arguments must match."
    )
    approver = serializers.ChoiceField(
        choices=["owner", "staff"],
        help_text="owner: you decide; staff: an operator decides, in the admin.",
    )
    status = serializers.ChoiceField(choices=["pending", "approved", "denied", "expired"])
    reason = serializers.CharField(help_text="A denial's reason (what the model reads).")
    rule = serializers.CharField(help_text="The rule that asked.")
    zone = serializers.CharField()
    run = serializers.IntegerField(help_text="The run that paused on the call.")
    conversation = serializers.UUIDField()
    created = serializers.DateTimeField()
    expires = serializers.DateTimeField(
        allow_null=True, help_text="When it is denied if nobody decides (null: never)."
    )
    decided = serializers.DateTimeField(allow_null=True)
    decided_by = serializers.CharField(allow_null=True)


class DecidedSerializer(ApprovalSerializer):
    """A decided call, and the run that goes on after it."""

    continued_by = serializers.IntegerField(
        allow_null=True,
        help_text="The run that goes on, now that every held call of the paused run is "
        "decided (follow it at `/api/runs/{id}/events/`); null while others still wait.",
    )


class DecideSerializer(StrictJson, serializers.Serializer[Any]):
    """A decision on one held call."""

    decision = serializers.ChoiceField(choices=["approve", "deny"])
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=2000, help_text="What the model reads."
    )
    arguments = serializers.JSONField(
        required=False, help_text="Approve with these arguments instead of the model's."
    )


class NewestFirst(CursorPagination):
    ordering = ("-created", "-id")


@extend_schema_view(
    list=extend_schema(
        summary="The user's tool calls that wait for a decision (newest first)",
        parameters=[
            OpenApiParameter(
                "status", str, enum=list(STATUSES), description="pending (default), ... or all."
            )
        ],
        responses={
            200: examples.answer(ApprovalSerializer(many=True), examples.APPROVAL),
            **examples.refusals(
                examples.invalid("An unknown status", status=["Must be one of ..."])
            ),
        },
    ),
    retrieve=extend_schema(
        summary="One approval",
        responses={
            200: examples.answer(ApprovalSerializer, examples.APPROVAL),
            **examples.refusals(examples.NO_APPROVAL),
        },
    ),
)
class ApprovalViewSet(JsonErrors, viewsets.GenericViewSet[ToolApproval]):
    """Tool calls an ``ask`` rule held, on the user's conversations."""

    serializer_class = ApprovalSerializer
    pagination_class = NewestFirst
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[ToolApproval]:
        wanted = self.request.query_params.get("status", "pending")
        if wanted not in STATUSES:
            raise ValidationError({"status": [f"Must be one of {', '.join(STATUSES)}."]})
        return user_approvals(user_id(self.request), None if wanted == "all" else wanted)

    def written_conversation(self) -> str | None:
        """The conversation of the approval a decision acts on, for an API key's ``profiles``
        (``ScopedKey``)."""
        pk = str(self.kwargs.get("pk", ""))
        if not pk.isdigit():
            return None
        rows = user_approvals(user_id(self.request), None).filter(pk=int(pk))
        conversation = rows.values_list("conversation_id", flat=True).first()
        return None if conversation is None else str(conversation)

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([approval_payload(row) for row in page or []])

    def retrieve(self, request: Request, pk: str) -> Response:
        row = user_approvals(user_id(request), None).filter(pk=int(pk)).first()
        if row is None:
            raise NotFound("No such approval.")
        return Response(approval_payload(row))

    @extend_schema(
        request=examples.body(
            DecideSerializer, examples.APPROVE, examples.DENY, examples.APPROVE_EDITED
        ),
        responses={
            200: examples.answer(DecidedSerializer, examples.APPROVED),
            **examples.refusals(
                examples.BAD_DECISION,
                examples.OPERATOR_DECIDES,
                examples.NO_APPROVAL,
                examples.DECIDED,
            ),
        },
        summary="Approve or deny a held tool call",
        description=(
            "Once every held call of its run is decided, the conversation goes on: approved "
            "calls run (with the edited arguments, if given), denied ones answer the model "
            "with the reason, in a new run, named by `continued_by` (with `Location`). Every "
            "tab of the chat sees the decision."
        ),
    )
    @action(detail=True, methods=["post"])
    def decide(self, request: Request, pk: str) -> Response:
        data = request.data
        if not isinstance(data, dict):
            raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
        try:
            verdict, reason, arguments = check_decision(
                data.get("decision"), data.get("reason"), data.get("arguments")
            )
        except FrameError as error:
            field = str(error).split(" ", 1)[0]
            raise ValidationError({field: [str(error)]}) from None
        try:
            decided = async_to_sync(self.service.decide_run)(
                user_id=user_id(request),
                username=request.user.get_username(),
                approval_id=int(pk),
                decision=Decision(verdict == "approve", reason, arguments),
            )
        except LookupError:  # an ``ApprovalRefused`` is answered by the exception handler
            raise NotFound("No such approval.") from None
        body = {**decided.approval, "continued_by": decided.continued_by}
        response = Response(body, status=status.HTTP_200_OK)
        if decided.continued_by is not None:
            response["Location"] = reverse("api-run-detail", args=[decided.continued_by])
        return response
