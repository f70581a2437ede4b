"""The websocket's origin check: the page that opens a socket must be this site.

A browser sends its cookies with a websocket handshake from any page, so the ``Origin`` must
be the server's own (the same scheme, host and port the request came to) or one of
``CSRF_TRUSTED_ORIGINS``; and the host must be one of ``ALLOWED_HOSTS``. A host-only check
would let a page on another port of the same host (another app, a dev server) use a user's
conversations.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

__all__ = ["SameOriginValidator", "allowed_origin"]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]], Any]
DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    return scheme, host.lower(), port if port is not None else DEFAULT_PORTS.get(scheme, 0)


def _parse(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return _origin(parts.scheme, parts.hostname, port)


def allowed_origin(scope: Scope) -> bool:
    """Whether the handshake's ``Origin`` is this site (or trusted) and its host allowed."""
    headers = {name: value.decode("latin1") for name, value in scope.get("headers", [])}
    origin = _parse(headers.get(b"origin", ""))
    host_header = headers.get(b"host", "")
    if origin is None or not host_header:
        return False
    host, port = split_domain_port(host_header)
    if not host or not validate_host(host, settings.ALLOWED_HOSTS):
        return False
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    own = _origin(scheme, host, int(port) if port else None)
    trusted = {parsed for url in settings.CSRF_TRUSTED_ORIGINS if (parsed := _parse(url))}
    return origin == own or origin in trusted


class SameOriginValidator:
    """ASGI middleware refusing a websocket handshake from another origin (HTTP 403)."""

    def __init__(self, application: ASGIApp) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not allowed_origin(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
