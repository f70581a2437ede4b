"""How the OpenAPI schema describes the API: its authentication and what every operation answers.

``ApiKeyScheme`` is the ``Bearer`` API key; ``ApiSchema`` adds to each operation's declared
answers the ones any operation can give (``examples.COMMON``), each with its examples: 401 and
429 (with ``Retry-After``) everywhere, and 413 and 415 where the operation takes a body.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from .examples import COMMON, JSON, refusals

__all__ = ["ApiKeyScheme", "ApiSchema"]

RETRY_AFTER = {
    "schema": {"type": "integer"},
    "description": "Seconds until the key's next request is let through (when throttled).",
}


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


class ApiSchema(AutoSchema):
    """An operation's answers, plus those every operation can give (merged into a declared
    status: the 429 of too many runs and of the throttle share one response)."""

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        statuses = [401, 429]
        if self._get_request_body() is not None:
            statuses += [413, 415]
        for status in statuses:
            code = str(status)
            common = self._get_response_for_code(
                refusals(*COMMON[status])[(status, JSON)], code, [JSON], direction
            )
            declared = responses.get(code, {}).get("content", {}).get(JSON)
            if declared is None:
                responses[code] = common
            else:
                examples = declared.setdefault("examples", {})
                examples.update(common["content"][JSON]["examples"])
        responses["429"].setdefault("headers", {})["Retry-After"] = RETRY_AFTER
        return responses
