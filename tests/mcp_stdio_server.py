"""A stdio MCP server for the tests, in the Python standard library only.

A sandboxed server sees neither the project nor its virtual environment (``agents.sandbox``),
so the SDK is out of its reach: this one speaks the protocol's wire format itself (JSON-RPC,
one message a line; the 2025-06-18 handshake, refusing the 2026 ``server/discover`` probe as
such servers do). ``SCRIPT`` is its source, run as ``python3 -c SCRIPT`` by the system's
Python. Its tools: ``echo``; ``environment`` (the variables it was given, names and values);
``whoami`` (its working directory and what it can see of the project); ``exit`` (it stops
mid-call).
"""

from __future__ import annotations

SCRIPT = r"""
import json, os, sys

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "environment", "description": "The process's environment.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "look", "description": "Whether a path exists, and the working directory.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                     "required": ["path"]}},
    {"name": "exit", "description": "Stop at once.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(name, arguments):
    if name == "echo":
        return text("echo: " + arguments["text"])
    if name == "environment":
        return {"content": [{"type": "text", "text": json.dumps(dict(os.environ))}],
                "structuredContent": dict(os.environ), "isError": False}
    if name == "look":
        return {"content": [], "isError": False, "structuredContent": {
            "exists": os.path.exists(arguments["path"]), "cwd": os.getcwd()}}
    if name == "exit":
        sys.stderr.write("the fixture was told to exit\n")
        sys.stderr.flush()
        os._exit(4)
    return {"content": [{"type": "text", "text": "no tool " + name}], "isError": True}


for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue  # a notification
    params = message.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18",
                  "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": "stdio-fixture", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = call(params["name"], params.get("arguments") or {})
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": ident,
              "error": {"code": -32601, "message": "Method not found: " + str(method)}})
        continue
    send({"jsonrpc": "2.0", "id": ident, "result": result})
"""

COMMAND = ["python3", "-c", SCRIPT]
