"""The MCP server at ``/mcp``: the SDK's low-level server behind the key gate, mounted in
front of Django.

Streamable HTTP serves both protocol eras: a 2026-07-28 client sends self-contained POSTs
(no session), an earlier one opens a session with ``initialize``. The SDK's session manager
must be running for either; Daphne sends no ASGI lifespan, so it is entered on the first
request, in a task of its own that lives as long as the event loop (a test's loop, or the
server's). ``requestState`` of input-required results is sealed with a key drawn from
``SECRET_KEY``, so any process of the deployment can read what another sent.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.utils.crypto import salted_hmac
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ListToolsResult, PaginatedRequestParams

import orkestrel
from orkestrel.db import in_thread

from .access import Refusal, allowed_host, authenticate, refuse
from .calls import call_tool, caller_of
from .tools import INPUT_SCHEMA, tool_of, usable_profiles

__all__ = ["MCP_PATH", "McpDoor", "build_server", "mcp_door", "transport_security", "with_mcp"]

MCP_PATH = "/mcp"
NAME = "orkestrel"
INSTRUCTIONS = (
    "Each tool is one of orkestrel's agents. Call it with a `message`; its answer carries a "
    "`conversation` id: pass it back as `conversation` to go on with the same conversation."
)
# How long an input-required result's state may be answered: a person reads the form first.
STATE_SECONDS = 3600.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Application = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
) -> ListToolsResult:
    caller = caller_of(ctx)
    profiles = await in_thread(usable_profiles)(caller.user_id)
    listed = [profile for profile in profiles if caller.allows_profile(profile.slug)]
    return ListToolsResult(tools=[tool_of(profile) for profile in listed])


def _principal(ctx: ServerRequestContext[Any, Any]) -> str:
    # A sealed state answers only the key that was asked.
    return f"key-{caller_of(ctx).key_id}"


def build_server() -> Server[Any]:
    """The low-level server: the caller's profiles as tools, and calling them."""
    server: Server[Any] = Server(
        NAME,
        version=orkestrel.__version__,
        title="orkestrel",
        instructions=INSTRUCTIONS,
        # Every tool takes the same arguments (the SDK checks ``Mcp-Param`` headers with it).
        get_tool_input_schema=lambda name: INPUT_SCHEMA,
        on_list_tools=_list_tools,
        on_call_tool=call_tool,
    )
    key = salted_hmac("orkestrel.mcp.request_state", "", algorithm="sha256").digest()
    security = RequestStateSecurity(
        keys=[key], ttl=STATE_SECONDS, bind_principal=_principal, audience=NAME
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=NAME))
    return server


def transport_security() -> TransportSecuritySettings:
    """The SDK's Host and Origin checks, from ``ALLOWED_HOSTS`` (and ``CSRF_TRUSTED_ORIGINS``).

    Django's host patterns (``*``, ``.example.com``) are beyond the SDK's list; then the door
    checks the host itself (``allowed_host``, the same answer: ``421``) and the SDK does not.
    """
    hosts = list(settings.ALLOWED_HOSTS)
    if any(host == "*" or host.startswith(".") for host in hosts):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [
        f"{scheme}://{host}{port}"
        for host in hosts
        for scheme in ("http", "https")
        for port in ("", ":*")
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{host}:*" for host in hosts)],
        allowed_origins=[*origins, *settings.CSRF_TRUSTED_ORIGINS],
    )


def _session_manager() -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(
        app=build_server(),
        security_settings=transport_security(),
        max_request_body_size=settings.ORKESTREL["MAX_REQUEST_BYTES"],
    )


class McpDoor:
    """The ASGI application at ``/mcp``: the host and key checks, then the SDK's transport."""

    def __init__(self, make: Callable[[], StreamableHTTPSessionManager] = _session_manager):
        self._make = make
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self._ready = asyncio.Event()
        # Held so the loop (which keeps only weak references to tasks) does not drop it.
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if not allowed_host(scope):
                raise Refusal(421, "invalid_host", "Invalid Host header.")
            await authenticate(scope)
        except Refusal as refusal:
            await refuse(send, refusal)
            return
        manager = await self.running()
        await manager.handle_request(scope, receive, send)

    async def running(self) -> StreamableHTTPSessionManager:
        """The session manager, entered in this event loop (on its first use here)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._task is None or self._task.done():
            self._loop, self._manager, self._ready = loop, self._make(), asyncio.Event()
            # A context of its own: the sessions it serves must not inherit a request's.
            self._task = loop.create_task(
                self._hold(self._manager, self._ready), context=contextvars.Context()
            )
        ready, task = self._ready, self._task
        await ready.wait()
        if task.done() or self._manager is None:
            raise RuntimeError("the MCP session manager could not start")
        return self._manager

    async def _hold(self, manager: StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        try:
            async with manager.run():
                ready.set()
                await asyncio.Event().wait()  # until the loop ends, or ``stop``
        finally:
            ready.set()

    async def stop(self) -> None:
        """End the session manager (its open sessions end with it); the next request starts
        another."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass


mcp_door = McpDoor()


def with_mcp(app: Application, door: Application = mcp_door) -> Application:
    """``app`` with ``/mcp`` answered by the MCP server instead."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == MCP_PATH or path == MCP_PATH + "/"):
            await door(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route
