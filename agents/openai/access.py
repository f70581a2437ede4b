"""Who is asking: the API key of ``Authorization: Bearer``, and its request budget.

The same keys and the same per-key budget as the REST API (``API_THROTTLE_RATE``): a key's
requests to ``/api/`` and ``/v1/`` count together. A key's scopes apply as on ``/api/``: reading
(GET) needs ``read``, anything else ``run``; a profile outside its ``profiles`` is no model at all
(404 ``model_not_found``), as an unknown one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import cast

from django.http import HttpRequest
from rest_framework.request import Request

from orkestrel.db import in_thread

from ..api.throttling import ApiKeyRateThrottle
from ..models import ApiKey
from ..models.keys import Scope
from ..usage.charge import KeyRef, charge_key
from .errors import OpenAIError, model_not_found

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
    # The slugs the key may use; ``None``: every profile its user may.
    profiles: tuple[str, ...] | None = None
    key_name: str = ""

    def allows_profile(self, slug: str) -> bool:
        """Whether the key may use the profile ``slug`` (its user's own access aside)."""
        return self.profiles is None or slug in self.profiles


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


def _scope_of(request: HttpRequest) -> Scope:
    return "read" if request.method in ("GET", "HEAD", "OPTIONS") else "run"


def _named_model(request: HttpRequest) -> str | None:
    """The ``model`` a JSON body names, if any (the view parses and refuses bad bodies)."""
    try:
        body = json.loads(request.body)
    except ValueError:
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def _check(raw: str, scope: Scope) -> Caller:
    key = ApiKey.objects.find(raw)
    if key is None:
        raise INVALID_KEY
    if not key.allows(scope):
        raise OpenAIError(
            403,
            f"This API key lacks the '{scope}' scope.",
            type="permission_error",
            code="scope",
        )
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
    allowed = key.profile_list
    return Caller(
        user_id=key.user_id,
        key_id=key.pk,
        username=key.user.get_username(),
        profiles=tuple(allowed) if allowed is not None else None,
        key_name=key.name,
    )


async def authenticate(request: HttpRequest) -> Caller:
    """The caller of ``request`` (one database hop), or ``OpenAIError`` 401 / 403 ``scope`` /
    429, or 404 ``model_not_found`` for a ``model`` outside the key's profiles."""
    raw = _bearer(request)
    if raw is None:
        raise INVALID_KEY
    caller = await in_thread(_check)(raw, _scope_of(request))
    # What this request starts is charged to the key (the usage ledger).
    charge_key(KeyRef(caller.key_id, caller.key_name))
    if caller.profiles is not None and request.method == "POST":
        model = _named_model(request)
        if model is not None and not caller.allows_profile(model):
            raise model_not_found(model)
    return caller
