"""``/api/usage/``: what the user spent, over every conversation (runs and summaries)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.usage import user_usage

from . import examples
from .base import JsonErrors
from .serializers import UserUsageSerializer

__all__ = ["UsageView"]


class UsageView(JsonErrors):
    """The user's cumulative usage counters and cost."""

    @extend_schema(
        summary="Your usage and cost, over every conversation",
        responses=examples.answer(UserUsageSerializer, examples.USER_USAGE),
    )
    def get(self, request: Request) -> Response:
        usage, conversations = user_usage(request.user.pk)
        return Response({"usage": usage, "conversations": conversations})
