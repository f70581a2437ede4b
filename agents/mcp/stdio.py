"""A stdio MCP server's process: the SDK's stdio client, the command under the sandbox.

The command runs as command tools' programs do (``agents.sandbox``): under bubblewrap, the file
system read-only, the project hidden, a private ``/tmp``, no network unless the server's row
allows it, its own empty folder as ``HOME`` and working directory (removed when it ends). No
sandbox, no start: an MCP server is code the operator did not write. Its environment is only
``PATH``, ``HOME``, ``LANG`` and the server's token variable (under its own name): nothing of
ours (``SECRET_KEY``, ``DATABASE_URL``, provider keys) reaches it. The SDK adds a few of the
parent's variables (``USER``, ``SHELL``…) to any environment it is given, so ``env -u`` drops
them on the way in; values travel in the environment, never on a command line another
process could read.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from django.conf import settings
from mcp.client._transport import TransportStreams
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, StdioServerParameters, stdio_client

from ..sandbox import Sandbox, child_environment, detect_sandbox, resolve_program
from .endpoint import McpEndpoint
from .errors import McpUnreachable

__all__ = ["StdioProcess"]

# How much of the end of what the server wrote to stderr an error quotes.
STDERR_TAIL = 2000


class StdioProcess:
    """One start of a stdio server; ``tail`` is the last thing it wrote to stderr.

    ``sandbox`` defaults to this machine's (``detect_sandbox``, probed on the first start).
    """

    def __init__(self, endpoint: McpEndpoint, sandbox: Sandbox | None = None) -> None:
        self.endpoint = endpoint
        self.sandbox = sandbox
        self._stderr: str | None = None
        self._last = ""

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[TransportStreams]:
        """Start the process and yield its streams; stop it and remove its folder after."""
        endpoint, name = self.endpoint, self.endpoint.name
        sandbox = self.sandbox
        if sandbox is None:
            # The first start in a process probes bubblewrap (a child process): off the loop.
            sandbox = self.sandbox = await asyncio.to_thread(detect_sandbox)
        if not sandbox.available:
            raise McpUnreachable(
                f"MCP server {name!r} runs only under an OS sandbox, and this server has none: "
                f"{sandbox.description}"
            )
        program = resolve_program(endpoint.command[0])
        wrapper = resolve_program("env")
        if program is None or wrapper is None:
            raise McpUnreachable(
                f"MCP server {name!r}: program {endpoint.command[0]!r} is not found on this server"
            )
        token = endpoint.bearer_token()  # before anything starts: unset, nothing does
        folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="orkestrel-mcp-")
        try:
            home = os.path.join(folder, "home")
            os.mkdir(home, 0o700)
            environment = child_environment(home)
            if endpoint.bearer_env:
                environment[endpoint.bearer_env] = token
            argv = sandbox.wrap(
                [program, *endpoint.command[1:]],
                workdir=home,
                network=endpoint.network,
                hidden=(settings.BASE_DIR,),
            )
            unset = [
                flag
                for variable in DEFAULT_INHERITED_ENV_VARS
                if variable not in environment
                for flag in ("-u", variable)
            ]
            parameters = StdioServerParameters(
                command=wrapper, args=[*unset, *argv], env=environment, cwd=home
            )
            self._stderr = os.path.join(folder, "stderr.log")
            errlog = await asyncio.to_thread(open, self._stderr, "w", encoding="utf-8")
            try:
                async with stdio_client(parameters, errlog=errlog) as streams:
                    yield streams
            finally:
                errlog.close()
        finally:
            self._last = self._read_tail()
            await asyncio.shield(asyncio.to_thread(shutil.rmtree, folder, True))

    def tail(self) -> str:
        """The last line the process wrote to stderr (``""``: nothing)."""
        return self._read_tail() or self._last

    def _read_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            with open(self._stderr, "rb") as log:
                log.seek(max(0, os.path.getsize(self._stderr) - STDERR_TAIL))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else ""
