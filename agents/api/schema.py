"""How the OpenAPI schema describes the API's own authentication (``Bearer`` API keys)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

__all__ = ["ApiKeyScheme"]


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
