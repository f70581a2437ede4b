"""MCP servers as tool sources, client side: the official ``mcp`` SDK over Streamable HTTP,
or over stdio to a sandboxed process (``stdio``).

``endpoint`` snapshots a server's row (what a run or a check needs, no ORM afterwards);
``connection`` owns one live SDK client in a task of its own; ``catalog`` caches what each
server offers; ``results`` turns a tool call's result into what the model reads; ``check``
is the admin's and the command's one-shot look at a server; ``sealing`` and ``credentials``
keep users' own tokens for the servers that take them. The runtime wraps a server as a
``ToolSource`` (``agents.runtime.mcp_tools``).
"""
