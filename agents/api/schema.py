"""How the OpenAPI schema describes the API: its authentication, its operations' names, and
what every operation answers.

``ApiKeyScheme`` is the ``Bearer`` API key; ``ApiSchema`` names each operation with a verb
(``operation_id``: ``listConversations``, ``cancelRun``) and adds to its declared answers the
ones any operation can give (``examples.COMMON``), each with its examples: 400 (a query
parameter it does not take), 401, 403 (a key without the scope), 406 and 429 (with
``Retry-After``) everywhere, 413 and 415
where it takes a body; every answer carries ``X-Request-ID``, and successes and 429s the
``RateLimit-*`` headers. It also records each operation's query parameters, which
``documented_query_parameters`` gives the views (``base.JsonErrors`` refuses any other).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import is_list_serializer
from drf_spectacular.utils import OpenApiResponse

from .examples import BAD_CURSOR, COMMON, PROBLEM, refusals
from .strict import StrictJson

if TYPE_CHECKING:
    from rest_framework.views import APIView

__all__ = ["ApiKeyScheme", "ApiSchema", "documented_query_parameters", "operation_id"]

RETRY_AFTER = {
    "schema": {"type": "integer"},
    "description": "Seconds until the key's next request is let through (when throttled).",
}
REQUEST_ID = {
    "schema": {"type": "string"},
    "description": "The request's id: the `X-Request-ID` sent (when well formed), else a new "
    "one. The server's log lines about the request name it. Every answer of the app carries "
    "it; a refusal by the HTTP server in front of it (a malformed body) may not.",
}
RATE_LIMIT = {
    "RateLimit-Limit": {
        "schema": {"type": "integer"},
        "description": "Requests the key may make per window (`API_THROTTLE_RATE`).",
    },
    "RateLimit-Remaining": {
        "schema": {"type": "integer"},
        "description": "Requests left in the window, this one counted.",
    },
    "RateLimit-Reset": {
        "schema": {"type": "integer"},
        "description": "Seconds until the oldest request of the window stops counting.",
    },
}

# The verb of each action DRF's viewsets name, and of a view's method.
CRUD: Final = {
    "list": "list",
    "retrieve": "get",
    "create": "create",
    "update": "replace",
    "partial_update": "update",
    "destroy": "delete",
}
METHODS: Final = {
    "GET": "get",
    "POST": "create",
    "PUT": "put",
    "PATCH": "update",
    "DELETE": "delete",
}
# Actions named by a noun (``/messages/``): the operation each method is, as ``verb Noun``
# with ``{parent}`` the singular of the resource the action hangs on.
NOUN_ACTIONS: Final = {
    ("messages", "GET"): "list{parent}Messages",
    ("messages", "POST"): "sendMessage",
    ("events", "GET"): "stream{parent}Events",
    ("branches", "GET"): "list{parent}Branches",
    ("branches", "POST"): "chooseBranch",
    ("sections", "GET"): "list{parent}Sections",
    ("section", "GET"): "getSection",
    ("pending", "GET"): "listPendingMessages",
    ("pending", "DELETE"): "takePendingMessages",
    ("attachments", "POST"): "uploadAttachment",
    ("import_records", "POST"): "importConversation",
    ("search", "GET"): "search{parent}s",
    ("run", "POST"): "create{parent}Run",
    ("runs", "GET"): "list{parent}Runs",
}


def _singular(word: str) -> str:
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _camel(words: list[str]) -> str:
    return "".join(part[:1].upper() + part[1:] for word in words for part in word.split("_"))


def operation_id(path: str, method: str, action: str | None) -> str:
    """A verb-first, lower-camel name for the operation (``cancelRun``, ``listConversations``)."""
    statics = [part for part in path.strip("/").split("/")[1:] if not part.startswith("{")]
    detail = path.rstrip("/").endswith("}")
    if action is not None and action not in CRUD and statics and statics[-1] != action:
        statics = [*statics, action]  # an action at its own ``url_path``
    if action is not None and action not in CRUD:
        resource = [_singular(word) for word in statics[:-1]]
        template = NOUN_ACTIONS.get((action, method))
        if template is not None:
            parent = _camel(resource[-1:]) if resource else ""
            return _lower(template.format(parent=parent))
        return _lower(_camel([action, *_qualified(resource)]))  # ``cancel`` + ``Run``
    verb = CRUD[action] if action is not None else METHODS.get(method, method.lower())
    if action is None and method == "GET" and not detail and statics[-1:] != ["usage"]:
        verb = "list" if statics and statics[-1].endswith("s") else "get"
    nouns = [_singular(word) for word in statics]
    if verb == "list" and nouns:
        nouns[-1] = statics[-1]
    return _lower(_camel([verb, *_qualified(nouns)]))


def _qualified(nouns: list[str]) -> list[str]:
    """The nouns that name the resource: the last one, with its owner when that is not the
    conversation every path hangs on (``workspace`` ``file``)."""
    named = [noun for noun in nouns if noun != "conversation"] if len(nouns) > 1 else nouns
    return named[-2:]


def _lower(name: str) -> str:
    return name[:1].lower() + name[1:]


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer <api key>``; drf-spectacular finds it by subclassing."""

    target_class = "agents.api.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from /settings/keys/ or `manage.py create_api_key`.",
        }


# ``(view class, action, method)`` → the query parameters its operation documents, read once
# per view class (``ApiSchema.get_operation`` records them as the schema is generated).
_QUERY: dict[tuple[type, str | None, str], frozenset[str]] = {}
_READ: set[type] = set()
_READ_LOCK = threading.Lock()


def documented_query_parameters(view: APIView, method: str) -> frozenset[str] | None:
    """The query parameters the schema documents for ``view``'s operation (``None``: no
    operation of the schema, such as ``OPTIONS``). Each view class's are read on its first
    request, from the schema of its routes alone (a few milliseconds)."""
    cls = type(view)
    if cls not in _READ:
        with _READ_LOCK:
            if cls not in _READ:
                _read_operations(cls)
                _READ.add(cls)
    return _QUERY.get((cls, getattr(view, "action", None), method))


def _read_operations(view_class: type) -> None:
    """Generate the schema of ``view_class``'s routes only, quietly (its warnings are the
    schema page's to show)."""
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator

    class Routes(EndpointEnumerator):
        def should_include_endpoint(self, path: str, callback: Any) -> bool:
            return getattr(callback, "cls", None) is view_class and bool(
                super().should_include_endpoint(path, callback)
            )

    class Generator(SchemaGenerator):
        endpoint_inspector_cls = Routes

    with GENERATOR_STATS.silence():
        Generator().get_schema(request=None, public=True)


class ApiSchema(AutoSchema):
    """An operation's name and answers, plus those every operation can give (merged into a
    declared status: the 429 of too many runs and of the throttle share one response)."""

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation: dict[str, Any] | None = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        action = getattr(self.view, "action", None)
        operation["operationId"] = operation_id(self.path, self.method, action)
        names = {p["name"] for p in operation.get("parameters", ()) if p["in"] == "query"}
        key = (type(self.view), action, self.method)
        _QUERY[key] = _QUERY.get(key, frozenset()) | names
        return operation

    def _map_serializer(self, serializer: Any, direction: Any, bypass_extensions: bool = False):
        mapped: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, StrictJson):
            mapped["additionalProperties"] = False  # refused by name (``StrictJson``)
        return mapped

    def _get_pagination_parameters(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = super()._get_pagination_parameters()
        if found or self.method != "GET" or self._get_paginator() is None:
            return found
        # An action answering a page (``search``) takes the cursor as ``list`` does.
        answer = self.get_response_serializers()
        if isinstance(answer, dict):
            answer = answer.get(200)
        if isinstance(answer, OpenApiResponse):
            answer = answer.response
        if is_list_serializer(answer):
            paginator = self._get_paginator()
            return list(paginator.get_schema_operation_parameters(self.view))
        return found

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        statuses = [400, 401, 403, 406, 429]
        if self._get_request_body() is not None:
            statuses += [413, 415]
        paged = any(p["name"] == "cursor" for p in self._get_pagination_parameters())
        for status in statuses:
            code = str(status)
            given = COMMON[status] + ((BAD_CURSOR,) if status == 400 and paged else ())
            common = self._get_response_for_code(
                refusals(*given)[(status, PROBLEM)], code, [PROBLEM], direction
            )
            if code not in responses:
                responses[code] = common
                continue
            if "content" not in responses[code]:
                continue  # declared without a body (one the HTTP server gives): left so
            declared = responses[code]["content"].get(PROBLEM)
            if declared is None:
                responses[code]["content"].update(common["content"])
            else:
                examples = declared.setdefault("examples", {})
                examples.update(common["content"][PROBLEM]["examples"])
        for code, response in responses.items():
            headers = response.setdefault("headers", {})
            headers["X-Request-ID"] = REQUEST_ID
            if code.startswith("2") or code == "429":
                headers.update(RATE_LIMIT)
        responses["429"]["headers"]["Retry-After"] = RETRY_AFTER
        return responses
