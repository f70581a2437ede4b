"""``GET /api/conversations/{id}/tools/``: what the conversation's agent can do.

The effective tool catalogue (``agents.runtime.catalogue``): the profile's enabled tools inside
its scope, MCP servers' tools included, each with whether it runs in read-only mode and
whether an ``ask`` rule can hold it for a person. Another user's conversation is a 404.
"""

from __future__ import annotations

import uuid

from asgiref.sync import async_to_sync
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Conversation

from ..runtime.catalogue import tool_catalogue
from . import examples
from .base import JsonErrors

__all__ = ["ToolCatalogueSerializer", "ToolCatalogueView", "ToolEntrySerializer", "urlpatterns"]


class ToolEntrySerializer(serializers.Serializer[None]):
    """One tool the agent can call."""

    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    safe = serializers.BooleanField(help_text="Every call of it runs in read-only mode.")
    # DRF's own ``Field.read_only`` and ``Field.source`` are attributes, not fields.
    read_only = serializers.ChoiceField(  # type: ignore[assignment]
        ["all", "some", "none"],
        help_text="Which of its calls run in read-only mode: `some` when it depends on the "
        "call (the workspace tool reads, but writes too).",
    )
    asks = serializers.BooleanField(
        help_text="An `ask` rule of the profile's authority policy can hold a call of it for a "
        "person's approval."
    )
    source = serializers.ChoiceField(  # type: ignore[assignment]
        ["builtin", "http", "command", "mcp"],
        help_text="Where it comes from: a built-in, an operator's HTTP or command tool, an "
        "MCP server.",
    )


class ToolCatalogueSerializer(serializers.Serializer[None]):
    """The conversation's effective tools, in the order the model is offered them."""

    read_only = serializers.BooleanField(  # type: ignore[assignment]
        help_text="The conversation is in read-only mode: only safe calls run."
    )
    tools = ToolEntrySerializer(many=True)


TOOLS = examples.example(
    "A profile with the workspace tool and an MCP server",
    {
        "read_only": False,
        "tools": [
            {
                "name": "workspace",
                "description": "Read and edit the files of the active workspace.",
                "safe": False,
                "read_only": "some",
                "asks": False,
                "source": "builtin",
            },
            {
                "name": "deploy",
                "description": "Deploy the site.",
                "safe": False,
                "read_only": "none",
                "asks": True,
                "source": "mcp",
            },
        ],
    },
)


class ToolCatalogueView(JsonErrors):
    """The tools a run of the conversation would offer its model."""

    @extend_schema(
        summary="The conversation's tools",
        description="The profile's enabled tools inside its scope, MCP servers' tools included "
        "(their servers are asked, as a run would), each with `safe` (runs in read-only mode) "
        "and `asks` (an `ask` rule can hold it for a person).",
        responses={
            200: examples.answer(ToolCatalogueSerializer, TOOLS),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    def get(self, request: Request, conversation_id: uuid.UUID) -> Response:
        user_id = request.user.pk
        assert user_id is not None  # the API's authentication let only users in
        try:
            catalogue = async_to_sync(tool_catalogue)(str(conversation_id), user_id)
        except Conversation.DoesNotExist:
            raise NotFound("No such conversation.") from None
        return Response(catalogue.payload())


urlpatterns = [path("", ToolCatalogueView.as_view(), name="api-conversation-tools")]
