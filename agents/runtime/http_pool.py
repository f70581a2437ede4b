"""The HTTP clients runs share to reach model servers: one pool per event loop and timeouts.

A client per run would open a new connection for every answer and, for ``https``, load the CA
bundle again (tens of milliseconds). A shared client keeps connections alive between runs.
"""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

import httpx

from orkestrel.providers.transport import streaming_transport

__all__ = ["shared_client"]

_Key = tuple[bool, float, float | None]
_pools: WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, httpx.AsyncClient]] = (
    WeakKeyDictionary()
)


def shared_client(*, secure: bool, connect: float, read: float | None) -> httpx.AsyncClient | None:
    """The running loop's client for these settings (``None`` outside an event loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    clients = _pools.setdefault(loop, {})
    key = (secure, connect, read)
    client = clients.get(key)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(read, connect=connect),
            transport=streaming_transport(secure=secure),
        )
        clients[key] = client
    return client
