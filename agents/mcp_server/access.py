"""Who calls ``/mcp``: the host it was sent to, and the API key of ``Authorization: Bearer``.

The same keys and the same per-key request budget as the REST API and ``/v1``
(``API_THROTTLE_RATE``). Every refused key gets the same ``401``, whatever the reason
(unknown, revoked, expired, an inactive user's), with ``WWW-Authenticate: Bearer`` as
MCP clients expect; a host outside ``ALLOWED_HOSTS`` gets ``421``, as the SDK answers one
outside its own allow-list. A key's scopes apply: the door needs ``read`` (listing the tools),
a tool call ``run``; a profile outside the key's ``profiles`` is no tool at all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from rest_framework.request import Request

from orkestrel.db import in_thread

from ..api.throttling import ApiKeyRateThrottle
from ..models import ApiKey

__all__ = ["CALLER", "Caller", "Refusal", "allowed_host", "authenticate", "refuse"]

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# Where the gate leaves the caller in the ASGI scope, for the tool handlers to read.
CALLER = "orkestrel.mcp.caller"
INVALID_KEY = (
    "Invalid API key. Make one on the settings page or with "
    "`python manage.py create_api_key <username>`."
)


@dataclass(frozen=True, slots=True)
class Caller:
    """The key's user, as the tool handlers need them."""

    user_id: int
    key_id: int
    username: str
    scopes: tuple[str, ...] = ("read", "run")
    # The slugs the key may use; ``None``: every profile its user may.
    profiles: tuple[str, ...] | None = None

    def allows(self, scope: str) -> bool:
        """Whether the key holds ``scope``."""
        return scope in self.scopes

    def allows_profile(self, slug: str) -> bool:
        """Whether the key may use the profile ``slug`` (its user's own access aside)."""
        return self.profiles is None or slug in self.profiles


class Refusal(Exception):
    """A request refused before the MCP transport reads it: its status and why."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class _Throttled:
    """What ``ApiKeyRateThrottle`` reads of a request: the key and its user."""

    auth: ApiKey
    user: object


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return cast(bytes, value).decode("latin-1")
    return None


def allowed_host(scope: Scope) -> bool:
    """Whether the request's ``Host`` is one Django serves (``ALLOWED_HOSTS``, its patterns
    included)."""
    host, _ = split_domain_port(_header(scope, b"host") or "")
    return bool(host) and validate_host(host, settings.ALLOWED_HOSTS)


def _bearer(scope: Scope) -> str | None:
    scheme, _, value = (_header(scope, b"authorization") or "").partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or " " in value:
        return None
    return value


def _check(raw: str) -> Caller:
    key = ApiKey.objects.find(raw)
    if key is None:
        raise Refusal(401, "invalid_api_key", INVALID_KEY)
    if not key.allows("read"):
        raise Refusal(403, "scope", "This API key lacks the 'read' scope.")
    throttle = ApiKeyRateThrottle()
    shim = cast(Request, _Throttled(key, key.user))
    if not throttle.allow_request(shim, None):  # type: ignore[arg-type]
        wait = throttle.wait()
        raise Refusal(
            429,
            "rate_limit_exceeded",
            "Rate limit reached for this API key; try again later.",
            retry_after=max(1, math.ceil(wait)) if wait is not None else 1,
        )
    key.touch()
    allowed = key.profile_list
    return Caller(
        user_id=key.user_id,
        key_id=key.pk,
        username=key.user.get_username(),
        scopes=tuple(key.scope_list),
        profiles=tuple(allowed) if allowed is not None else None,
    )


async def authenticate(scope: Scope) -> Caller:
    """The caller of the request (one database hop), left in ``scope``; ``Refusal`` 401, 403
    (no ``read`` scope) or 429.

    ``scope["user"]`` becomes the SDK's authenticated user for the key, so a Streamable HTTP
    session answers only the key that opened it.
    """
    raw = _bearer(scope)
    if raw is None:
        raise Refusal(401, "invalid_api_key", INVALID_KEY)
    caller = await in_thread(_check)(raw)
    scope[CALLER] = caller
    token = AccessToken(
        token=f"key-{caller.key_id}",
        client_id=f"key-{caller.key_id}",
        scopes=list(caller.scopes),
        subject=str(caller.user_id),
    )
    scope["user"] = AuthenticatedUser(token)
    return caller


async def refuse(send: Send, refusal: Refusal) -> None:
    """Answer ``refusal`` as JSON, in the API's error shape."""
    body = json.dumps({"detail": refusal.message, "code": refusal.code}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b'Bearer error="invalid_token"'))
    if refusal.retry_after is not None:
        headers.append((b"retry-after", str(refusal.retry_after).encode()))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
