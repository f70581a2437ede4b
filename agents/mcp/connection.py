"""One live connection to an MCP server: the SDK's ``Client`` held by a task of its own.

The server is reached over Streamable HTTP (or the older HTTP+SSE transport, for a URL whose
path ends in ``/sse``), or started as a sandboxed stdio process (``stdio``) that lives as long
as the connection.

The SDK's client is an anyio context: it must be left by the task that entered it, and when
the server drops, it cancels that task. So neither a run's task nor a tool call's may hold
it: an *owner* task enters it, publishes it, and waits to be told to close; calls from any
task go through the published client, each bounded by the server's call timeout. A server
that goes down ends the owner; the calls then fail with ``McpUnreachable`` (the model reads
it) and the next call connects afresh. The connection opens on first use and closes when its
holder (a run's tool source) settles.

A change in the server's tools (``notifications/tools/list_changed`` on the older revisions;
a ``subscriptions/listen`` event on 2026-07-28) calls ``on_tools_changed``.

A server's request for the user's input (an ``elicitation/create`` request mid-call on the
older revisions; an input-required result a 2026-07-28 call returns, which the SDK answers and
retries) goes to ``asker``, the run's; while it waits for the person, the connection's
requests are off the clock (``RequestClocks``). Without one the SDK refuses such requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client._transport import Transport
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .clocks import RequestClocks
from .endpoint import McpEndpoint, OfferedTool
from .errors import McpError, McpRefused, McpTimeout, McpUnreachable
from .oauth_refresh import access_token
from .stdio import StdioProcess

__all__ = ["InputAsker", "Listing", "McpConnection"]

logger = logging.getLogger(__name__)

# A connection nobody used for this long closes itself: a holder that never settles (a session
# built only to compact, a run cancelled mid-call) must not keep a server's session open.
IDLE_SECONDS = 60.0
# How long the older HTTP+SSE transport's stream may stay quiet when the server may be waiting
# for a person (the run's input bridge bounds that wait; an idle connection closes itself).
ASKING_QUIET = 3600.0
# A listing's pages are followed this far (a server paging forever must not hang a run).
MAX_PAGES = 20
CLIENT_INFO = types.Implementation(name="orkestrel", version="1")

# Answers a server's request for the user's input (``agents.runtime.mcp_input``).
InputAsker = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]


@dataclass(frozen=True, slots=True)
class Listing:
    """What a server offers, with how long it says the list stays fresh (``None``: unsaid)."""

    tools: tuple[OfferedTool, ...]
    ttl_seconds: float | None
    # The server has resources (then the model gets a tool to list and read them).
    resources: bool = False


class McpConnection:
    """A lazily opened, closable connection to one server, usable from any task."""

    def __init__(
        self,
        endpoint: McpEndpoint,
        on_tools_changed: Callable[[], None] | None = None,
        asker: InputAsker | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.on_tools_changed = on_tools_changed
        self.asker = asker
        self._clocks = RequestClocks()
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        # HTTP statuses that mean the credentials were refused, seen on this connection.
        self._refused: int | None = None
        self._busy = 0
        self._used = 0.0
        # The stdio server's process, once one started (its stderr explains its end).
        self._process: StdioProcess | None = None

    @property
    def open(self) -> bool:
        """Whether a connection is up now."""
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def list_tools(self) -> Listing:
        """Every tool the server offers (following its pages)."""
        client = await self._connected()
        tools: list[OfferedTool] = []
        cursor: str | None = None
        ttl: float | None = None
        for _ in range(MAX_PAGES):
            page: types.ListToolsResult = await self._bounded(
                client.list_tools(cursor=cursor, cache_mode="bypass")
            )
            # Only a 2026-07-28 server's ``ttlMs`` is a hint (0: list again every time).
            modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
            if ttl is None and modern and "ttl_ms" in page.model_fields_set:
                ttl = page.ttl_ms / 1000
            tools.extend(_offered(tool) for tool in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return Listing(tuple(tools), ttl, client.server_capabilities.resources is not None)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Call the server's tool ``name`` (its own name, not the model's)."""
        client = await self._connected()
        return await self._bounded(client.call_tool(name, dict(arguments)))

    async def ask[T](self, request: Callable[[Client], Awaitable[T]]) -> T:
        """Any other request (prompts, resources): ``request`` is given the SDK client; bounded
        by the call timeout, its failures told as ``McpError``s."""
        client = await self._connected()
        return await self._bounded(request(client))

    async def capabilities(self) -> types.ServerCapabilities:
        """What the server said it offers at the handshake (connecting if need be)."""
        return (await self._connected()).server_capabilities

    async def close(self) -> None:
        """Close the connection, if one is open (it may open again on the next use)."""
        owner, closing = self._owner, self._closing
        self._client = None
        if owner is None or closing is None:
            return
        closing.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(owner), timeout=self.endpoint.connect_timeout)
        if not owner.done():
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner

    # -- the owner ---------------------------------------------------------------------------

    async def _connected(self) -> Client:
        async with self._lock:
            client = self._client
            if client is not None and self.open:
                return client
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            closing = self._closing = asyncio.Event()
            self._refused = None
            owner = self._owner = asyncio.create_task(
                self._own(ready, closing), name=f"mcp:{self.endpoint.name}"
            )
            # The handshake is one request: the connect timeout plus one call's.
            limit = self.endpoint.connect_timeout + self.endpoint.call_timeout
            try:
                client = await asyncio.wait_for(asyncio.shield(ready), timeout=limit)
            except TimeoutError:
                closing.set()
                owner.cancel()
                raise McpTimeout(
                    f"MCP server {self.endpoint.name!r} did not answer within "
                    f"{limit:g}s while connecting"
                ) from None
            self._client = client
            return client

    async def _own(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        endpoint = self.endpoint
        listener: asyncio.Task[None] | None = None
        try:
            async with self._transport() as transport:
                asking = self.asker is not None
                client = Client(
                    transport,
                    # With a person to ask, ``_bounded`` alone bounds each request: the SDK's
                    # clock would run on while the server waits for the person.
                    read_timeout_seconds=None if asking else endpoint.call_timeout,
                    elicitation_callback=self._elicited if asking else None,
                    message_handler=self._message,
                    client_info=CLIENT_INFO,
                    # Listings are cached per process by ``catalog``, across connections.
                    cache=None,
                )
                async with client:
                    listener = self._listen(client)
                    ready.set_result(client)
                    try:
                        await self._until_closed_or_idle(closing)
                    finally:
                        if listener is not None:
                            listener.cancel()
                            with contextlib.suppress(BaseException):
                                await listener
        except BaseException as error:  # the owner ends, whatever ended it; callers read why
            task = asyncio.current_task()
            cancelled = isinstance(error, asyncio.CancelledError)
            if not ready.done():
                ready.set_exception(self._failure(error))
            elif not closing.is_set():
                logger.warning("MCP server %r dropped the connection: %s", endpoint.name, error)
            if cancelled and task is not None and task.cancelling():
                raise
        finally:
            if self._owner is asyncio.current_task():
                self._client = None

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Transport]:
        """The SDK transport to the server: its sandboxed process (stdio), else Streamable
        HTTP over a client that carries the headers and watches for refused credentials."""
        endpoint = self.endpoint
        if endpoint.command:
            process = self._process = StdioProcess(endpoint)
            yield process.transport()
            return
        # A call's stream is quiet while the server waits for the person it asked: with one
        # to ask, reads are bounded by the call (``_bounded``), not by a gap between bytes.
        timeout = httpx2.Timeout(
            endpoint.call_timeout,
            connect=endpoint.connect_timeout,
            read=None if self.asker is not None else endpoint.call_timeout,
        )
        headers = endpoint.request_headers()
        if endpoint.oauth:
            headers["Authorization"] = f"Bearer {await access_token(endpoint)}"
        if endpoint.legacy_sse:
            yield sse_client(
                endpoint.url,
                headers=headers,
                timeout=endpoint.connect_timeout,
                # The stream is quiet while the server waits for the person it asked.
                sse_read_timeout=IDLE_SECONDS * 2 if self.asker is None else ASKING_QUIET,
                httpx_client_factory=self._http_client,
            )
            return
        async with self._http_client(headers, timeout) as http:
            yield streamable_http_client(endpoint.url, http_client=http)

    def _http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """An HTTP client sending ``headers`` that watches for refused credentials."""
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout,
            auth=auth,
            event_hooks={"response": [self._saw_response]},
        )

    async def _until_closed_or_idle(self, closing: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        self._used = loop.time()
        while not closing.is_set():
            try:
                await asyncio.wait_for(closing.wait(), timeout=IDLE_SECONDS)
            except TimeoutError:
                if not self._busy and loop.time() - self._used >= IDLE_SECONDS:
                    return

    def _listen(self, client: Client) -> asyncio.Task[None] | None:
        """On 2026-07-28, changes arrive on a listen stream (the older revisions' come to
        ``_message`` unasked)."""
        capability = client.server_capabilities.tools
        if self.on_tools_changed is None or capability is None or not capability.list_changed:
            return None
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _event in subscription:
                        self._changed()
            except Exception as error:  # noqa: BLE001 - no stream, no live updates; calls work
                logger.info("MCP server %r: no change stream (%s)", self.endpoint.name, error)

        return asyncio.create_task(listen(), name=f"mcp-listen:{self.endpoint.name}")

    async def _elicited(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The server asks the user (mid-call, or in a call's input-required result)."""
        assert self.asker is not None  # the callback is given only with an asker
        with self._clocks.paused():
            return await self.asker(params)

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._changed()

    def _changed(self) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    async def _saw_response(self, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            self._refused = response.status_code

    # -- errors ------------------------------------------------------------------------------

    async def _bounded[T](self, work: Any) -> T:
        """``work`` within the call timeout, its failures as ``McpError``s."""
        self._busy += 1
        try:
            result: T = await self._clocks.within(work, self.endpoint.call_timeout)
            return result
        except TimeoutError:
            raise McpTimeout(
                f"MCP server {self.endpoint.name!r} did not answer within "
                f"{self.endpoint.call_timeout:g}s"
            ) from None
        except McpError:
            raise
        except MCPError as error:
            if error.code == types.CONNECTION_CLOSED:
                # The server went away under the call (a stdio process that ended): say why,
                # and let the next call start afresh rather than find this one dead.
                failure = self._failure(error)
                await self._drop()
                raise failure from None
            if not self.open:
                raise self._failure(error) from None
            # A protocol-level refusal of this call (an unknown tool, bad arguments).
            raise McpError(
                f"MCP server {self.endpoint.name!r} refused the call: {error.message}"
            ) from None
        except Exception as error:  # noqa: BLE001 - a transport's failure, told as the server's
            raise self._failure(error) from None
        finally:
            self._busy -= 1
            self._used = asyncio.get_running_loop().time()

    async def _drop(self) -> None:
        """Forget a connection that died, waiting (briefly) for its owner to wind down."""
        owner, closing = self._owner, self._closing
        self._client = None
        if closing is not None:
            closing.set()
        if owner is not None and not owner.done():
            await asyncio.wait({owner}, timeout=self.endpoint.connect_timeout)

    def _failure(self, error: BaseException) -> McpError:
        """The ``McpError`` a caller reads for what ended (or never began) the connection."""
        name = self.endpoint.name
        if isinstance(error, McpError):
            return error
        if self._refused is not None:
            return McpRefused(f"MCP server {name!r} refused the credentials (HTTP {self._refused})")
        leaf = _leaf(error)
        if isinstance(leaf, httpx2.TimeoutException | TimeoutError):
            return McpTimeout(f"MCP server {name!r} timed out: {_describe(leaf)}")
        if self._process is not None:
            # A process's last words say more than a closed pipe.
            said = self._process.tail()
            detail = f"{_describe(leaf)}; it wrote: {said}" if said else _describe(leaf)
            return McpUnreachable(f"MCP server {name!r} (stdio) stopped: {detail}")
        return McpUnreachable(f"MCP server {name!r} is unreachable: {_describe(leaf)}")


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside (task groups nest what went wrong in exception groups)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _describe(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "the connection dropped"
    if isinstance(error, MCPError):
        return error.message
    return str(error) or type(error).__name__


def _offered(tool: types.Tool) -> OfferedTool:
    annotations = tool.annotations
    read_only = annotations.read_only_hint if annotations is not None else None
    return OfferedTool(
        tool.name,
        tool.description or tool.title or "",
        tool.input_schema,
        read_only,
    )
