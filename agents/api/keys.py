"""API keys: list, create (the key is shown once) and revoke the user's own keys.

``GET /api/keys/`` lists them (never a secret), ``POST /api/keys/`` answers 201 with the new
key's full ``key`` (its only appearance), ``DELETE /api/keys/<id>/`` revokes (204). Another
user's key is a 404, as if it did not exist. Creating and revoking need the ``keys`` scope (or
the browser's session), and a key never mints one that may do more than itself.
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

from conversations.services import enabled_profiles

from ..models import ApiKey
from ..models.keys import DEFAULT_SCOPES, SCOPES
from . import examples
from .base import JsonErrors
from .permissions import OutOfScope
from .strict import StrictJson

if TYPE_CHECKING:
    # django-stubs' placeholder for ``AUTH_USER_MODEL``, which its plugin resolves.
    from django.contrib.auth.models import _User

__all__ = ["ApiKeySerializer", "ApiKeyViewSet", "IssuedApiKeySerializer", "urlpatterns"]


class ApiKeySerializer(StrictJson, serializers.ModelSerializer[ApiKey]):
    """A key as listed: what it is called and how it starts, never its secret or hash."""

    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=SCOPES),
        source="scope_list",
        min_length=1,
        required=False,
        help_text="What the key may do: `read` (every GET), `run` (start, cancel, retry, "
        "decide; `/v1`), `keys` (create and revoke keys). Default: `read` and `run`.",
    )
    profiles = serializers.ListField(
        child=serializers.SlugField(max_length=64),
        source="profile_list",
        min_length=1,
        allow_null=True,
        required=False,
        help_text="The profile slugs the key may use; `null` (the default): every profile.",
    )

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "prefix",
            "created",
            "last_used",
            "expires",
            "revoked",
            "scopes",
            "profiles",
        ]
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


def _check_profiles(user: _User, profiles: list[str] | None) -> None:
    """Refuse (400) slugs of profiles the user may not use: a typo would make a useless key."""
    if profiles is None:
        return
    usable = set(enabled_profiles(user.pk).values_list("slug", flat=True))
    unknown = [slug for slug in profiles if slug not in usable]
    if unknown:
        raise serializers.ValidationError({"profiles": [f"No profile {unknown[0]!r}."]})


def _within(
    minter: ApiKey, scopes: list[str], profiles: list[str] | None
) -> tuple[list[str], list[str] | None]:
    """A key's successor may do no more than it: its scopes and profiles within the minter's
    (profiles left out inherit the minter's); else 403 ``scope``."""
    beyond = [scope for scope in scopes if scope not in minter.scope_list]
    if beyond:
        raise OutOfScope(f"This API key cannot grant the {beyond[0]!r} scope it lacks.")
    allowed = minter.profile_list
    if allowed is None:
        return scopes, profiles
    if profiles is None:
        return scopes, allowed
    outside = [slug for slug in profiles if slug not in allowed]
    if outside:
        raise OutOfScope(f"This API key may not use the profile {outside[0]!r}.")
    return scopes, profiles


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
    write_scope = "keys"

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
        fields = dict(serializer.validated_data)
        user = _signed_in(request)
        asked: list[str] | None = fields.pop("scope_list", None)
        profiles: list[str] | None = fields.pop("profile_list", None)
        _check_profiles(user, profiles)
        scopes: list[str] = list(DEFAULT_SCOPES) if asked is None else asked
        minter = request.auth
        if isinstance(minter, ApiKey):
            if asked is None:  # the default, cut to what the minter holds
                scopes = [scope for scope in scopes if minter.allows(scope)] or scopes
            scopes, profiles = _within(minter, scopes, profiles)
        key, raw = ApiKey.objects.issue(user=user, scopes=scopes, profiles=profiles, **fields)
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
