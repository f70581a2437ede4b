"""API keys: list, create (the key is shown once) and revoke the user's own keys.

``GET /api/keys/`` lists them (never a secret), ``POST /api/keys/`` answers 201 with the new
key's full ``key`` (its only appearance), ``DELETE /api/keys/<id>/`` revokes (204). Another
user's key is a 404, as if it did not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter

from ..models import ApiKey
from . import examples
from .base import JsonErrors

if TYPE_CHECKING:
    # django-stubs' placeholder for ``AUTH_USER_MODEL``, which its plugin resolves.
    from django.contrib.auth.models import _User

__all__ = ["ApiKeySerializer", "ApiKeyViewSet", "IssuedApiKeySerializer", "urlpatterns"]


class ApiKeySerializer(serializers.ModelSerializer[ApiKey]):
    """A key as listed: what it is called and how it starts, never its secret or hash."""

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "created", "last_used", "expires", "revoked"]
        read_only_fields = ["id", "prefix", "created", "last_used", "revoked"]


class IssuedApiKeySerializer(ApiKeySerializer):
    """A key just created: as listed, plus the full ``key``, shown this once."""

    key = serializers.CharField(read_only=True, help_text="The full key; it is not shown again.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]


def _signed_in(request: Request) -> _User:
    """The signed-in user (the API's permission lets no anonymous request this far)."""
    user = request.user
    if isinstance(user, AnonymousUser):
        raise NotAuthenticated
    return user


@extend_schema_view(list=extend_schema(responses=examples.answer(ApiKeySerializer, examples.KEY)))
class ApiKeyViewSet(
    JsonErrors,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet[ApiKey],
):
    """The signed-in user's API keys, newest first; revoked ones stay listed."""

    serializer_class = ApiKeySerializer
    lookup_value_converter = "int"

    def get_queryset(self) -> QuerySet[ApiKey]:
        return ApiKey.objects.filter(user=_signed_in(self.request))

    @extend_schema(
        request=examples.body(ApiKeySerializer, examples.NEW_KEY),
        responses={
            201: examples.answer(IssuedApiKeySerializer, examples.ISSUED_KEY),
            **examples.refusals(examples.KEY_INVALID),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create a key; the answer holds the full ``key``, which is never shown again."""
        serializer = ApiKeySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        key, raw = ApiKey.objects.issue(user=_signed_in(request), **serializer.validated_data)
        # ``IssuedApiKeySerializer``'s shape; the secret is never an attribute of the row.
        return Response({**ApiKeySerializer(key).data, "key": raw}, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None, **examples.refusals(examples.NO_KEY)})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Revoke a key (it stays listed, marked revoked); revoking it again changes nothing."""
        key = self.get_object()
        ApiKey.objects.filter(pk=key.pk).revoke()
        return Response(status=status.HTTP_204_NO_CONTENT)


router = SimpleRouter(use_regex_path=False)
router.register("", ApiKeyViewSet, basename="api-key")

urlpatterns = router.urls
