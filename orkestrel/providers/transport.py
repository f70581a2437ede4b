"""The transport model answers stream over: httpx's API on aiohttp's C parser.

httpcore reads a streamed body in pure Python (h11, an anyio cancel scope per read). When a
model's events come one per read, as they do at a model's pace, that costs about 130 µs of
CPU per event against under 50 µs through ``httpx_aiohttp``'s transport, the one the OpenAI
SDK ships as ``DefaultAioHttpClient`` (``bench/transport.py``). The providers keep httpx's API
and error classes.

An aiohttp session belongs to one event loop and complains when it is collected open. Each
session made here is closed when its loop shuts down its async generators, which
``asyncio.run``, ``asyncio.Runner``, asgiref's ``async_to_sync`` and the worker loop do; a
loop merely stopped (Daphne's, at exit) has them closed at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import urllib.request
from collections.abc import AsyncGenerator
from weakref import WeakKeyDictionary

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

__all__ = ["streaming_transport"]

# The sessions still open on each loop, with the generator that closes them at its shutdown
# (the loop holds that generator weakly: this keeps it alive).
_open: WeakKeyDictionary[
    asyncio.AbstractEventLoop, tuple[set[aiohttp.ClientSession], AsyncGenerator[None]]
] = WeakKeyDictionary()


def streaming_transport(*, secure: bool) -> httpx.AsyncBaseTransport:
    """A transport for one ``httpx.AsyncClient``; its session opens on the first request.

    Proxies come from ``HTTP(S)_PROXY`` / ``NO_PROXY`` as with httpx's own transport; TLS is
    checked against httpx's CA bundle. A plain-http endpoint (a local model server) never
    loads that bundle.
    """

    def session() -> aiohttp.ClientSession:
        # No cap on connections: every stream holds one for as long as it lasts.
        connector = aiohttp.TCPConnector(limit=0, ssl=transport.ssl_context if secure else False)
        # aiohttp's ``trust_env`` looks proxies (and ~/.netrc) up on a thread at every request;
        # on only when a proxy is set, so no netrc credentials go to a model server.
        proxied = any(scheme != "no" for scheme in urllib.request.getproxies_environment())
        return _closed_with_loop(aiohttp.ClientSession(connector=connector, trust_env=proxied))

    transport = AiohttpTransport(verify=secure, client=session)
    return transport


def _closed_with_loop(session: aiohttp.ClientSession) -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    entry = _open.get(loop)
    if entry is None:
        sessions: set[aiohttp.ClientSession] = set()
        closer = _closer(loop, sessions)
        # The first step runs in this loop's thread, so the loop's ``firstiter`` hook
        # registers the generator; the step ends at its ``yield`` without suspending.
        try:
            closer.asend(None).send(None)
        except StopIteration:
            pass
        _open[loop] = entry = (sessions, closer)
    sessions = entry[0]
    sessions.difference_update([open_one for open_one in sessions if open_one.closed])
    sessions.add(session)
    return session


async def _closer(
    loop: asyncio.AbstractEventLoop, sessions: set[aiohttp.ClientSession]
) -> AsyncGenerator[None]:
    """Suspended for the loop's life; finalized by ``loop.shutdown_asyncgens()``."""
    try:
        yield
    finally:
        _open.pop(loop, None)
        for session in list(sessions):
            await session.close()
        sessions.clear()


@atexit.register
def _close_at_exit() -> None:
    for loop, (_, closer) in list(_open.items()):
        if not loop.is_running() and not loop.is_closed():
            loop.run_until_complete(closer.aclose())
