"""``/api/profiles/``: the agent profiles this user may use."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.pagination import CursorPagination

from conversations.services import enabled_profiles

from ..models import AgentProfile, ApiKey
from . import examples
from .base import JsonErrors
from .serializers import ProfileSerializer

__all__ = ["ProfileViewSet"]


class BySlug(CursorPagination):
    ordering = ("slug",)


@extend_schema_view(
    list=extend_schema(responses=examples.answer(ProfileSerializer, examples.PROFILE))
)
class ProfileViewSet(JsonErrors, mixins.ListModelMixin, viewsets.GenericViewSet[AgentProfile]):
    """The enabled agent profiles (a conversation's ``profile`` is one of their slugs); through
    an API key limited to some profiles, only those."""

    serializer_class = ProfileSerializer
    pagination_class = BySlug

    def get_queryset(self) -> QuerySet[AgentProfile]:
        profiles = enabled_profiles(self.request.user.pk)
        key = self.request.auth
        allowed = key.profile_list if isinstance(key, ApiKey) else None
        return profiles if allowed is None else profiles.filter(slug__in=allowed)
