"""Who is asking: the API key of ``Authorization: Bearer``, and its request budget.

The same keys and the same per-key budget as the REST API (``API_THROTTLE_RATE``): a key's
requests to ``/api/`` and ``/v1/`` count together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from django.http import HttpRequest
from rest_framework.request import Request

from orkestrel.db import in_thread

from ..api.throttling import ApiKeyRateThrottle
from ..models import ApiKey
from .errors import OpenAIError

__all__ = ["Caller", "authenticate"]

INVALID_KEY = OpenAIError(
    401,
    "Incorrect API key provided. Make one on the settings page or with "
    "`python manage.py create_api_key <username>`.",
    code="invalid_api_key",
)


@dataclass(frozen=True, slots=True)
class Caller:
    """The key's user, as a view needs it (``username`` signs the approvals it decides)."""

    user_id: int
    key_id: int
    username: str


@dataclass(frozen=True, slots=True)
class _Throttled:
    """What ``ApiKeyRateThrottle`` reads of a request: the key and its user."""

    auth: ApiKey
    user: object


def _bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip() or " " in value.strip():
        return None
    return value.strip()


def _check(raw: str) -> Caller:
    key = ApiKey.objects.find(raw)
    if key is None:
        raise INVALID_KEY
    throttle = ApiKeyRateThrottle()
    shim = cast(Request, _Throttled(key, key.user))
    if not throttle.allow_request(shim, None):  # type: ignore[arg-type]
        wait = throttle.wait()
        raise OpenAIError(
            429,
            "Rate limit reached for this API key; try again later.",
            type="rate_limit_error",
            code="rate_limit_exceeded",
            retry_after=max(1, math.ceil(wait)) if wait is not None else 1,
        )
    key.touch()
    return Caller(user_id=key.user_id, key_id=key.pk, username=key.user.get_username())


async def authenticate(request: HttpRequest) -> Caller:
    """The caller of ``request`` (one database hop), or ``OpenAIError`` 401 / 429."""
    raw = _bearer(request)
    if raw is None:
        raise INVALID_KEY
    return await in_thread(_check)(raw)
