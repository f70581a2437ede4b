"""Who a websocket belongs to: the session cookie's user, read once when the socket connects.

Channels' ``AuthMiddlewareStack`` does the same, and also wraps ``send`` so that a session
changed while answering is saved on ``http.response.start``. A websocket never sends that
message, yet the wrapper reads the session (through its lazy proxy) on every frame: thousands
a second while runs stream. No consumer here changes the session, so sockets go without it.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware

__all__ = ["SocketSessionMiddleware", "socket_auth_stack"]


class SocketSessionMiddleware(SessionMiddleware):
    """``scope["session"]`` from the cookie, with ``send`` passed on untouched."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def socket_auth_stack(inner: Any) -> CookieMiddleware:
    """``inner`` with ``scope["user"]`` set from the session cookie (``AuthMiddlewareStack``
    without the per-message session hook)."""
    return CookieMiddleware(SocketSessionMiddleware(AuthMiddleware(inner)))
