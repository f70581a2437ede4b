"""A real MCP server for the tests: the official SDK's ``MCPServer`` over Streamable HTTP.

Run as a process (``python tests/mcp_server.py PORT``; ``McpProcess`` starts one and waits
until it answers). Its tools cover what the client side must handle: text, structured and
image results, a read-only tool and a write, a tool that adds another one and announces the
change (``list_changed``), and one that stops the whole server mid-call (a server going down
during a run); a prompt (``review``, with a required and an optional argument) and two
resources (``notes://today``, text; ``notes://logo``, an image). The older HTTP+SSE
transport serves the same server at ``/sse``. With ``MCP_TEST_TOKEN`` set, a request without
``Authorization: Bearer <token>`` gets ``401``; every request's ``X-Tenant`` header is
recorded for ``seen_tenant``.
"""

# No ``from __future__ import annotations``: the SDK reads the tools' annotations at run time.
import base64
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A 1x1 transparent PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


def build_app() -> Any:
    """The server's ASGI app (imported only in the server's own process)."""
    import mcp_types as types
    from mcp.server.caching import CacheHint
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.utilities.types import Image
    from pydantic import BaseModel
    from starlette.responses import PlainTextResponse

    ttl = int(os.environ.get("MCP_TEST_TTL_MS", "0"))
    server = MCPServer(
        "fixture", cache_hints={"tools/list": CacheHint(ttl_ms=ttl)} if ttl else None
    )
    tenants: list[str] = []

    class Forecast(BaseModel):
        city: str
        celsius: float

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(
        description="Look an item up (changes nothing).",
        annotations=types.ToolAnnotations(read_only_hint=True),
    )
    def lookup(key: str) -> str:
        return f"value of {key}"

    @server.tool(description="Delete an item.")
    def delete_item(key: str) -> str:
        return f"deleted {key}"

    @server.tool(description="The forecast of a city.")
    def forecast(city: str) -> Forecast:
        return Forecast(city=city, celsius=21.5)

    @server.tool(description="A one-pixel image.")
    def pixel() -> Image:
        return Image(data=PIXEL, format="png")

    @server.tool(description="Fail on purpose.")
    def broken() -> str:
        raise ValueError("the fixture tool failed")

    @server.tool(description="Add the tool 'late' and announce the change.")
    async def grow(ctx: Context) -> str:
        if "late" not in {tool.name for tool in await server.list_tools()}:

            @server.tool(name="late", description="A tool added while the server ran.")
            def late() -> str:
                return "late answer"

        # Both revisions: the 2026 listen stream, and the older spontaneous notification.
        await ctx.notify_tools_changed()
        await ctx.request_context.session.send_tool_list_changed()
        return "grown"

    @server.tool(description="Stop the whole server at once.")
    def die() -> str:
        os._exit(3)

    @server.prompt(description="Ask for a review of some code.")
    def review(code: str, focus: str = "bugs") -> list[Any]:
        from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage

        return [
            UserMessage(f"Review this code for {focus}:\n{code}"),
            AssistantMessage("I will read it closely."),
        ]

    @server.resource(
        "notes://today", name="today", description="Today's notes.", mime_type="text/plain"
    )
    def today() -> str:
        return "Buy milk; call Ada."

    @server.resource("notes://logo", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return PIXEL

    @server.custom_route("/tenant", methods=["GET"])
    async def tenant(request: Any) -> Any:
        return PlainTextResponse(",".join(tenants))

    app = server.streamable_http_app(streamable_http_path="/mcp")
    # The older HTTP+SSE transport beside it: the stream at /sse, posts to /messages/.
    legacy = server.sse_app()
    token = os.environ.get("MCP_TEST_TOKEN")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(("/mcp", "/sse", "/messages")):
            headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
            if "x-tenant" in headers:
                tenants.append(headers["x-tenant"])
            if token and headers.get("authorization") != f"Bearer {token}":
                await PlainTextResponse("bad token", status_code=401)(scope, receive, send)
                return
        if scope["type"] == "http" and scope["path"].startswith(("/sse", "/messages")):
            await legacy(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class McpProcess:
    """One fixture server process on loopback."""

    process: "subprocess.Popen[bytes]"
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        """The same server over the older HTTP+SSE transport."""
        return f"http://127.0.0.1:{self.port}/sse"

    @classmethod
    def start(
        cls,
        log: Path,
        env: dict[str, str] | None = None,
        port: int | None = None,
        script: Path | None = None,
    ) -> "McpProcess":
        """Start a server (this file's, or ``script``'s) and wait until its port accepts
        connections (or fail with its log)."""
        port = port or free_port()
        handle = log.open("wb")
        process = subprocess.Popen(
            [sys.executable, str(script or Path(__file__)), str(port)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        handle.close()
        started = cls(process, port, log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return started
            except OSError:
                time.sleep(0.05)
        started.stop()
        raise RuntimeError(f"the MCP fixture server did not start:\n{log.read_text()[-2000:]}")

    def stop(self) -> None:
        from tests.processes import stop_group

        stop_group(self.process, grace=5)

    def seen_tenants(self) -> list[str]:
        """The ``X-Tenant`` headers the server received, in order."""
        import httpx

        text = httpx.get(f"http://127.0.0.1:{self.port}/tenant", timeout=5).text
        return [part for part in text.split(",") if part]


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
