"""``/api/mcp/credentials/``: the user's own tokens for MCP servers that take each user's.

``GET`` lists the servers the user may (or still does) keep a token for, with whether one is
set, never the token. ``POST`` enters or replaces one (``{"server", "token"}``; 201, the slot
without the token), ``GET {server}/`` reads one slot and ``DELETE {server}/`` forgets the token
(204). A server the user may not enter a token for, or another user's, is a 404. Entering and
removing need the ``keys`` scope (or the browser's session): a credential is account material.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from ..mcp.credentials import CredentialSlot, credential_slots, enter_credential, remove_credential
from ..models.mcp import MAX_TOKEN_LENGTH
from . import examples
from .base import JsonErrors, user_id
from .strict import StrictJson

__all__ = [
    "McpCredentialSerializer",
    "NewMcpCredentialSerializer",
    "urlpatterns",
]


class McpCredentialSerializer(serializers.Serializer[Any]):
    """A server's slot for the user's token: whether one is set, never the token."""

    server = serializers.SlugField(help_text="The MCP server's name.")
    address = serializers.CharField(help_text="The server's URL.")
    in_use = serializers.BooleanField(
        help_text="The server takes users' tokens now and is open to you (`false`: a token "
        "you still keep, which you may only remove)."
    )
    # Text, not an enum: a second ``state`` enum would rename the workspace's in the schema.
    state = serializers.CharField(
        help_text="`present`: set; `missing`: none entered; `unreadable`: the server's key "
        "changed, enter it again.",
    )
    updated = serializers.DateTimeField(allow_null=True, help_text="When it was last entered.")
    oauth = serializers.BooleanField(
        help_text="The server takes an account connected with OAuth (on the settings page), "
        "not a token entered here."
    )


class NewMcpCredentialSerializer(StrictJson, serializers.Serializer[Any]):
    """A token to enter (or replace) for a server."""

    server = serializers.SlugField(max_length=48, help_text="The MCP server's name.")
    token = serializers.CharField(
        max_length=MAX_TOKEN_LENGTH,
        write_only=True,
        trim_whitespace=True,
        help_text="The token the server issued you, sent as `Authorization: Bearer <token>`.",
    )


def _shown(slot: CredentialSlot) -> dict[str, Any]:
    return McpCredentialSerializer(
        {
            "server": slot.name,
            "address": slot.address,
            "in_use": slot.in_use,
            "state": slot.state,
            "updated": slot.updated,
            "oauth": slot.oauth,
        }
    ).data


SLOT = {
    "server": "github",
    "address": "https://mcp.example.com/mcp",
    "in_use": True,
    "state": "present",
    "updated": examples.CREATED,
    "oauth": False,
}
NO_SERVER = examples.not_found("No MCP server 'github' takes your token.")
BAD_TOKEN = examples.invalid(
    "A token with spaces",
    token=["Paste the token as the server issued it: visible characters, no spaces."],
)


class McpCredentialList(JsonErrors):
    """The user's MCP credentials: list, enter."""

    write_scope = "keys"

    @extend_schema(
        summary="Your MCP servers' credential slots (never a token)",
        responses=examples.answer(
            McpCredentialSerializer(many=True), examples.example("One token set", SLOT)
        ),
    )
    def get(self, request: Request) -> Response:
        slots = credential_slots(user_id(request))
        return Response([_shown(slot) for slot in slots])

    @extend_schema(
        summary="Enter or replace your token for an MCP server",
        request=examples.body(
            NewMcpCredentialSerializer,
            examples.example("A token", {"server": "github", "token": "ghp_…"}),
        ),
        responses={
            201: examples.answer(McpCredentialSerializer, examples.example("Entered", SLOT)),
            **examples.refusals(BAD_TOKEN, NO_SERVER),
        },
    )
    def post(self, request: Request) -> Response:
        given = NewMcpCredentialSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        server, token = given.validated_data["server"], given.validated_data["token"]
        try:
            slot = enter_credential(user_id(request), server, token)
        except LookupError:
            raise NotFound(f"No MCP server {server!r} takes your token.") from None
        except ValidationError as error:
            raise serializers.ValidationError({"token": error.messages}) from None
        return Response(_shown(slot), status=status.HTTP_201_CREATED)


class McpCredentialDetail(JsonErrors):
    """One server's slot: read, forget the token."""

    write_scope = "keys"

    @extend_schema(
        summary="Your credential slot for one MCP server",
        responses={
            200: examples.answer(McpCredentialSerializer, examples.example("Set", SLOT)),
            **examples.refusals(NO_SERVER),
        },
    )
    def get(self, request: Request, server: str) -> Response:
        slot = next((s for s in credential_slots(user_id(request)) if s.name == server), None)
        if slot is None:
            raise NotFound(f"No MCP server {server!r} takes your token.")
        return Response(_shown(slot))

    @extend_schema(
        summary="Forget your token for an MCP server",
        responses={204: None, **examples.refusals(NO_SERVER)},
    )
    def delete(self, request: Request, server: str) -> Response:
        if not remove_credential(user_id(request), server):
            raise NotFound(f"You keep no token for the MCP server {server!r}.")
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = [
    path("", McpCredentialList.as_view(), name="api-mcp-credentials"),
    path("<str:server>/", McpCredentialDetail.as_view(), name="api-mcp-credential"),
]
