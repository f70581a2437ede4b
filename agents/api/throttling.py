"""One request rate for the API (``API_THROTTLE_RATE``), counted per key, user or address,
and told on every answer it counted: ``RateLimit-Limit``, ``RateLimit-Remaining`` and
``RateLimit-Reset`` (the IETF draft's fields)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from orkestrel.request_scope import add_headers

from ..models import ApiKey

if TYPE_CHECKING:  # DRF imports this module while ``rest_framework.views`` is half loaded
    from rest_framework.request import Request
    from rest_framework.views import APIView

__all__ = ["ApiKeyRateThrottle"]


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Scope ``api_key``: each API key has its own budget; so does each session user and,
    before signing in, each client address. Over it, DRF answers 429 with ``Retry-After``.
    Each count puts the ``RateLimit-*`` headers on the request's answer (``/api/`` and
    ``/v1/`` alike, through ``orkestrel.request_scope``).
    """

    # Set from the rate by DRF's ``__init__`` (its stubs do not declare them).
    num_requests: int
    duration: int

    def allow_request(self, request: Request, view: APIView) -> bool:
        allowed = super().allow_request(request, view)
        if self.rate is not None:
            add_headers(self.limit_headers())
        return allowed

    def limit_headers(self) -> dict[str, str]:
        """The budget as it stands after this request: its size, what is left, and the
        seconds until the oldest request counted stops counting."""
        history: list[float] = self.history
        reset = math.ceil(history[-1] + self.duration - self.now) if history else 0
        return {
            "RateLimit-Limit": str(self.num_requests),
            "RateLimit-Remaining": str(max(0, self.num_requests - len(history))),
            "RateLimit-Reset": str(max(0, reset)),
        }

    scope = "api_key"

    def get_rate(self) -> str | None:
        # Read per request, not at import as DRF's class attribute is: a changed
        # ``REST_FRAMEWORK`` setting reloads ``api_settings`` and applies at once.
        rates = api_settings.DEFAULT_THROTTLE_RATES
        if self.scope not in rates:
            raise ImproperlyConfigured(f"No throttle rate is set for scope {self.scope!r}.")
        rate = rates[self.scope]
        return None if rate is None else str(rate)

    def get_cache_key(self, request: Request, view: APIView) -> str:
        if isinstance(request.auth, ApiKey):
            ident = f"key-{request.auth.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
