"""``/api/conversations/{id}/mcp/``: the prompts and resources of a conversation's MCP servers.

``GET prompts/`` lists the prompts (the chat's slash commands ``/<server>__<prompt>``) with their
arguments; ``POST prompts/`` gets one with its arguments, as the messages it stands for (text).
``GET resources/`` lists the resources; ``GET resource/?server=&uri=`` reads one, as text (what
the chat attaches to a message). A server that cannot answer a listing is named in
``unavailable``; one that fails a get or a read is a ``502`` with its error's code. Another
user's conversation, and a server its profile does not use, are 404s. The views run on the
database thread and wait for the servers on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from ..mcp.errors import McpError
from ..runtime.mcp_offerings import (
    Offerings,
    conversation_servers,
    offered_prompts,
    offered_resources,
    prompt_messages,
    resource_contents,
)
from . import examples
from .base import JsonErrors
from .dispatch import Deferred, on_database_thread
from .errors import PROBLEM, ErrorSerializer
from .strict import StrictJson

__all__ = ["McpFailed", "McpPromptsView", "McpResourceView", "McpResourcesView", "urlpatterns"]


class McpFailed(exceptions.APIException):
    """An MCP server could not answer (its error's code: ``mcp_unreachable``...)."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = "The MCP server could not answer."
    default_code = "mcp_error"


class UnavailableSerializer(serializers.Serializer[Any]):
    server = serializers.CharField(help_text="The server that could not be asked.")
    detail = serializers.CharField(help_text="Why (the server's error).")
    code = serializers.CharField(help_text="`mcp_unreachable`, `mcp_refused`, `mcp_timeout`...")


class PromptArgumentSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    # DRF's metaclass takes declared fields off the class: this shadows no ``Field.required``.
    required = serializers.BooleanField()  # type: ignore[assignment]


class PromptSerializer(serializers.Serializer[Any]):
    command = serializers.CharField(help_text="The slash command's word, `<server>__<prompt>`.")
    server = serializers.CharField()
    name = serializers.CharField(help_text="The prompt's name on its server.")
    title = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    arguments = PromptArgumentSerializer(many=True)


class PromptListSerializer(serializers.Serializer[Any]):
    prompts = PromptSerializer(many=True)
    unavailable = UnavailableSerializer(many=True)


class PromptRequestSerializer(StrictJson, serializers.Serializer[Any]):
    server = serializers.SlugField(max_length=48)
    prompt = serializers.CharField(max_length=200)
    arguments = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=100_000),
        required=False,
        default=dict,
        help_text="The prompt's arguments, name → text.",
    )


class PromptTextSerializer(serializers.Serializer[Any]):
    role = serializers.ChoiceField(choices=["user", "assistant"])
    text = serializers.CharField(allow_blank=True)


class PromptMessagesSerializer(serializers.Serializer[Any]):
    messages = PromptTextSerializer(many=True)


class ResourceSerializer(serializers.Serializer[Any]):
    server = serializers.CharField()
    uri = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    mime = serializers.CharField(allow_blank=True)


class ResourceListSerializer(serializers.Serializer[Any]):
    resources = ResourceSerializer(many=True)
    unavailable = UnavailableSerializer(many=True)


class ResourceTextSerializer(serializers.Serializer[Any]):
    uri = serializers.CharField()
    mime = serializers.CharField(allow_blank=True)
    text = serializers.CharField(allow_blank=True)


class ResourceContentsSerializer(serializers.Serializer[Any]):
    contents = ResourceTextSerializer(many=True)


PROMPT = {
    "command": "github__review",
    "server": "github",
    "name": "review",
    "title": "",
    "description": "Ask for a review of some code.",
    "arguments": [{"name": "code", "description": "", "required": True}],
}
RESOURCE = {
    "server": "notes",
    "uri": "notes://today",
    "name": "today",
    "description": "Today's notes.",
    "mime": "text/plain",
}
NO_SERVER = examples.not_found("No MCP server 'github' in this conversation.")
DOWN = examples.Refusal(
    status=502,
    name="The server is down",
    detail="MCP server 'github' is unreachable: connection refused",
    code="mcp_unreachable",
)


def _refusals(*given: examples.Refusal) -> dict[Any, OpenApiResponse]:
    """``given``'s answers, and the 502 of a server that could not answer."""
    return {
        **examples.refusals(*given),
        (502, PROBLEM): OpenApiResponse(
            ErrorSerializer,
            description="The MCP server could not answer (or refused): `code` says how.",
            examples=[examples.example(DOWN.name, DOWN.value())],
        ),
    }


def _unavailable(offerings: Offerings[Any]) -> list[dict[str, str]]:
    return [
        {"server": item.server, "detail": item.detail, "code": item.code}
        for item in offerings.unavailable
    ]


def _answered(outcome: Callable[[], Any], shape: Callable[[Any], dict[str, Any]]) -> Response:
    """The answer to a look at the servers, their failures mapped to the API's errors."""
    try:
        return Response(shape(outcome()))
    except LookupError as error:
        raise exceptions.NotFound(
            f"No MCP server {error.args[0]!r} in this conversation."
        ) from None
    except McpError as error:
        raise McpFailed(str(error), error.code) from None


class _OnDatabaseThread(JsonErrors):
    @classmethod
    def as_view(cls, **initkwargs: Any) -> Any:
        return on_database_thread(super().as_view(**initkwargs))


class McpPromptsView(_OnDatabaseThread):
    """The prompts of the conversation's MCP servers: list, get one."""

    @extend_schema(
        summary="The prompts of the conversation's MCP servers (slash commands)",
        responses={
            200: examples.answer(
                PromptListSerializer,
                examples.example("One prompt", {"prompts": [PROMPT], "unavailable": []}),
            ),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    def get(self, request: Request, conversation_id: str) -> Deferred:
        servers = conversation_servers(request.user, str(conversation_id))  # type: ignore[arg-type]
        return Deferred(
            self,
            offered_prompts(servers),
            lambda outcome: _answered(
                outcome,
                lambda found: {
                    "prompts": [
                        {
                            "command": p.command,
                            "server": p.server,
                            "name": p.name,
                            "title": p.title,
                            "description": p.description,
                            "arguments": [
                                {
                                    "name": a.name,
                                    "description": a.description,
                                    "required": a.required,
                                }
                                for a in p.arguments
                            ],
                        }
                        for p in found.items
                    ],
                    "unavailable": _unavailable(found),
                },
            ),
        )

    @extend_schema(
        operation_id="getMcpPromptMessages",
        summary="Get an MCP prompt with its arguments, as messages",
        request=examples.body(
            PromptRequestSerializer,
            examples.example(
                "A review", {"server": "github", "prompt": "review", "arguments": {"code": "x=1"}}
            ),
        ),
        responses={
            200: examples.answer(
                PromptMessagesSerializer,
                examples.example(
                    "Its messages",
                    {"messages": [{"role": "user", "text": "Review this code for bugs:\nx=1"}]},
                ),
            ),
            **_refusals(examples.NO_CONVERSATION, NO_SERVER),
        },
    )
    def post(self, request: Request, conversation_id: str) -> Deferred:
        given = PromptRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        asked = given.validated_data
        servers = conversation_servers(request.user, str(conversation_id))  # type: ignore[arg-type]
        work = prompt_messages(servers, asked["server"], asked["prompt"], asked["arguments"])
        return Deferred(
            self,
            work,
            lambda outcome: _answered(
                outcome,
                lambda texts: {"messages": [{"role": t.role, "text": t.text} for t in texts]},
            ),
        )


class McpResourcesView(_OnDatabaseThread):
    """The resources of the conversation's MCP servers."""

    @extend_schema(
        summary="The resources of the conversation's MCP servers",
        responses={
            200: examples.answer(
                ResourceListSerializer,
                examples.example("One resource", {"resources": [RESOURCE], "unavailable": []}),
            ),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    def get(self, request: Request, conversation_id: str) -> Deferred:
        servers = conversation_servers(request.user, str(conversation_id))  # type: ignore[arg-type]
        return Deferred(
            self,
            offered_resources(servers),
            lambda outcome: _answered(
                outcome,
                lambda found: {
                    "resources": [r.as_json() for r in found.items],
                    "unavailable": _unavailable(found),
                },
            ),
        )


class McpResourceView(_OnDatabaseThread):
    """One resource of one of the conversation's MCP servers, read as text."""

    @extend_schema(
        summary="Read an MCP resource, as text",
        parameters=[
            OpenApiParameter("server", str, required=True, description="The server's name."),
            OpenApiParameter("uri", str, required=True, description="The resource's URI."),
        ],
        responses={
            200: examples.answer(
                ResourceContentsSerializer,
                examples.example(
                    "A note",
                    {"contents": [{"uri": "notes://today", "mime": "text/plain", "text": "Hi"}]},
                ),
            ),
            **_refusals(examples.NO_CONVERSATION, NO_SERVER),
        },
    )
    def get(self, request: Request, conversation_id: str) -> Deferred:
        server, uri = request.query_params.get("server", ""), request.query_params.get("uri", "")
        if not server or not uri:
            raise serializers.ValidationError(
                {
                    name: ["This parameter is required."]
                    for name in ("server", "uri")
                    if not request.query_params.get(name)
                }
            )
        servers = conversation_servers(request.user, str(conversation_id))  # type: ignore[arg-type]
        return Deferred(
            self,
            resource_contents(servers, server, uri),
            lambda outcome: _answered(
                outcome, lambda parts: {"contents": [part.as_json() for part in parts]}
            ),
        )


urlpatterns = [
    path("prompts/", McpPromptsView.as_view(), name="api-mcp-prompts"),
    path("resources/", McpResourcesView.as_view(), name="api-mcp-resources"),
    path("resource/", McpResourceView.as_view(), name="api-mcp-resource"),
]
