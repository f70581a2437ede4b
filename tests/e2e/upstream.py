"""A fake OpenAI-compatible model server: a real loopback HTTP server speaking Chat Completions.

The app under test reaches it over HTTP as it would reach OpenAI, vLLM or llama.cpp: a
``ProviderEndpoint`` of kind ``openai`` whose base URL is ``FakeUpstream.url``. It serves
``POST /v1/chat/completions`` in the wire shapes of OpenAI's API reference, streamed
(``chat.completion.chunk`` server-sent events: a role chunk, content / ``reasoning_content`` /
``tool_calls`` deltas, a ``finish_reason`` chunk, the usage-only chunk with empty ``choices``
that ``stream_options.include_usage`` asks for, then ``data: [DONE]``) or not (one
``chat.completion`` object), and ``GET /v1/models``.

Nothing is enqueued: each reply follows from the request, as a model's would, so a test states
only what it sends and reads what came back (``reply_for`` is the whole script):

- the last message is a tool result: text that quotes it (``TOOL_ANSWER`` + the result);
- ``response_format`` asks for a ``json_schema``: a JSON object matching that schema;
- a tool named ``get_weather`` is offered and the last message is the user's: a call of it
  with ``{"city": "Paris"}``, its arguments split across deltas as real servers split them;
- the ``workspace`` tool is offered and the last message is the user's, containing
  ``WRITE_TRIGGER``: a call writing ``WRITE_ARGUMENTS``;
- the ``ask_user`` tool is offered and the last user message contains ``ASK_TRIGGER``: a call
  asking ``ASK_ARGUMENTS``;
- the last user message contains ``FAIL_TRIGGER``: a 500 whose body holds ``SECRET_DETAIL``
  (which must never reach the app's clients);
- the last user message contains ``FAIL_ONCE_TRIGGER``: a 500 the first time this server is
  asked to answer that message, the echo below after (a model that recovers: a retry works);
- the last user message contains ``CUT_TRIGGER``: ``CUT_TEXT`` streamed, then the connection
  closed mid-stream (no finish, no end of the chunked body: a model server that died);
- otherwise text echoing the last user message (``ECHO`` + the message).

``reasoning_effort`` in the request adds a ``reasoning_content`` delta naming it. Every request
body is recorded (``requests``), so a test can check what the app sent upstream.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "CUT_TEXT",
    "CUT_TRIGGER",
    "ECHO",
    "FAIL_ONCE_TRIGGER",
    "FAIL_TRIGGER",
    "MODEL",
    "SECRET_DETAIL",
    "TOOL_ANSWER",
    "WEATHER_ARGUMENTS",
    "WEATHER_TOOL",
    "WRITE_ARGUMENTS",
    "WRITE_TRIGGER",
    "ASK_TRIGGER",
    "ASK_ARGUMENTS",
    "FakeUpstream",
    "Reply",
    "instance_of",
    "message_texts",
    "reply_for",
]

MODEL = "fake-model"
ECHO = "Upstream heard: "
TOOL_ANSWER = "The weather service says: "
FAIL_TRIGGER = "UPSTREAM-FAILS"
FAIL_ONCE_TRIGGER = "UPSTREAM-FAILS-ONCE"
CUT_TRIGGER = "UPSTREAM-CUTS"
CUT_TEXT = "Here is the first half of the answer"
SECRET_DETAIL = "upstream-internal-detail-7f3a"
WEATHER_TOOL = "get_weather"
WEATHER_ARGUMENTS = {"city": "Paris"}
WRITE_TRIGGER = "WRITE-NOTES"
WRITE_ARGUMENTS = {"operation": "write", "path": "notes.md", "content": "approved words"}
ASK_TRIGGER = "ASK-ME"
ASK_ARGUMENTS = {"question": "Which format?", "choices": ["PDF", "Markdown"], "free_text": True}
# Split mid-token, as OpenAI and vLLM split a call's arguments across deltas.
_WEATHER_PIECES = ('{"ci', 'ty": "Pa', 'ris"}')


@dataclass(frozen=True)
class Reply:
    """What the fake model answers: text pieces (one delta each), reasoning, a tool call."""

    content: Sequence[str] = ()
    reasoning: Sequence[str] = ()
    call: str | None = None  # the called tool's name; its arguments are ``arguments``
    arguments: Sequence[str] = ()
    status: int = 200
    error: str | None = None
    finish_reason: str = "stop"
    cut: bool = False  # the stream breaks off after the content
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    call_id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [word + (" " if index < len(words) - 1 else "") for index, word in enumerate(words)]


def instance_of(schema: Mapping[str, Any]) -> Any:
    """A value matching a (simple) JSON Schema: every property present, ``enum``s' first."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((name for name in kind if name != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: instance_of(sub) for name, sub in properties.items()}
    if kind == "array":
        return [instance_of(schema.get("items", {"type": "string"}))]
    if kind == "string":
        return "Paris"
    if kind == "integer":
        return max(int(schema.get("minimum", 21)), 21)
    if kind == "number":
        return max(float(schema.get("minimum", 21.5)), 21.5)
    if kind == "boolean":
        return True
    return None


def reply_for(body: Mapping[str, Any]) -> Reply:
    """The fake model's answer to one Chat Completions request body."""
    messages: list[dict[str, Any]] = body.get("messages") or []
    last: dict[str, Any] = messages[-1] if messages else {}
    user: dict[str, Any] = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    said = _text(user.get("content"))
    effort = body.get("reasoning_effort")
    reasoning = _words(f"Reasoning at {effort} effort.") if effort else []
    if FAIL_TRIGGER in said.replace(FAIL_ONCE_TRIGGER, "") and last.get("role") == "user":
        return Reply(status=500, error=f"model crashed: {SECRET_DETAIL}")
    if CUT_TRIGGER in said and last.get("role") == "user":
        return Reply(content=_words(CUT_TEXT), cut=True)
    if last.get("role") == "tool":
        return Reply(content=_words(TOOL_ANSWER + _text(last.get("content"))), reasoning=reasoning)
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema", {})
        text = json.dumps(instance_of(schema))
        third = max(len(text) // 3, 1)
        pieces = [text[:third], text[third : 2 * third], text[2 * third :]]
        return Reply(content=[piece for piece in pieces if piece], reasoning=reasoning)
    offered = {
        tool.get("function", {}).get("name")
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
    }
    if "workspace" in offered and WRITE_TRIGGER in said and last.get("role") == "user":
        return Reply(
            call="workspace", arguments=[json.dumps(WRITE_ARGUMENTS)], finish_reason="tool_calls"
        )
    if "ask_user" in offered and ASK_TRIGGER in said and last.get("role") == "user":
        return Reply(
            call="ask_user", arguments=[json.dumps(ASK_ARGUMENTS)], finish_reason="tool_calls"
        )
    if WEATHER_TOOL in offered and last.get("role") == "user":
        return Reply(
            call=WEATHER_TOOL,
            arguments=_WEATHER_PIECES,
            reasoning=reasoning,
            finish_reason="tool_calls",
        )
    return Reply(content=_words(ECHO + (said or "(nothing)")), reasoning=reasoning)


def _usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    prompt = 8 + sum(len(_text(m.get("content")).split()) for m in body.get("messages") or [])
    completion = max(len(reply.content) + len(reply.reasoning) + len(reply.arguments), 1)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _chunk(reply: Reply, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": reply.id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def stream_events(body: Mapping[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed answer, in order (``[DONE]`` is the caller's)."""
    yield _chunk(reply, {"role": "assistant", "content": "", "refusal": None})
    for piece in reply.reasoning:
        yield _chunk(reply, {"reasoning_content": piece})
    for piece in reply.content:
        yield _chunk(reply, {"content": piece})
    if reply.call is not None:
        yield _chunk(
            reply,
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": reply.call_id,
                        "type": "function",
                        "function": {"name": reply.call, "arguments": ""},
                    }
                ]
            },
        )
        for piece in reply.arguments:
            yield _chunk(reply, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    yield _chunk(reply, {}, reply.finish_reason)
    if (body.get("stream_options") or {}).get("include_usage"):
        last = _chunk(reply, {})
        last["choices"] = []
        last["usage"] = _usage(body, reply)
        yield last


def completion(body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
    """The ``chat.completion`` object of an answer that is not streamed."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(reply.content) or None,
        "refusal": None,
    }
    if reply.reasoning:
        message["reasoning_content"] = "".join(reply.reasoning)
    if reply.call is not None:
        message["tool_calls"] = [
            {
                "id": reply.call_id,
                "type": "function",
                "function": {"name": reply.call, "arguments": "".join(reply.arguments)},
            }
        ]
    return {
        "id": reply.id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": _usage(body, reply),
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked streams
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # quiet: pytest shows what matters

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            created = int(time.time())
            models = [{"id": MODEL, "object": "model", "created": created, "owned_by": "fake"}]
            self._json(200, {"object": "list", "data": models})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path != "/v1/chat/completions":
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(400, "the body is not JSON")
            return
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            self._error(400, "'messages' must be a list of message objects")
            return
        self.server.record(body)
        reply = reply_for(body)
        if self.server.fails_first(body):
            reply = Reply(status=500, error="model crashed, once")
        if reply.status != 200:
            self._error(reply.status, reply.error or "failed", kind="server_error")
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._json(200, completion(body, reply))

    def _stream(self, body: Mapping[str, Any], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        frames = [f"data: {json.dumps(event)}\n\n".encode() for event in stream_events(body, reply)]
        frames.append(b"data: [DONE]\n\n")
        if reply.cut:
            # The role chunk and the content, then the connection drops mid-body.
            frames = frames[: 1 + len(reply.content)]
        for frame in frames:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
            if self.server.delay:
                time.sleep(self.server.delay)  # the model's pace: time is the contract here
        if reply.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        error = {"message": message, "type": kind, "param": None, "code": None}
        self._json(status, {"error": error})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, delay: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay = delay
        self.bodies: list[dict[str, Any]] = []
        self.failed_once: set[str] = set()
        self._lock = threading.Lock()

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.bodies.append(body)

    def fails_first(self, body: Mapping[str, Any]) -> bool:
        """Whether ``body`` asks, for the first time, to answer a ``FAIL_ONCE_TRIGGER`` message."""
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        said = _text(last.get("content")) if last.get("role") == "user" else ""
        if FAIL_ONCE_TRIGGER not in said:
            return False
        with self._lock:
            first = said not in self.failed_once
            self.failed_once.add(said)
        return first


class FakeUpstream:
    """The fake model server on a free loopback port; ``start()``, then ``stop()``.

    Args:
        delay: Seconds between streamed frames (0: as fast as the socket takes them).
    """

    def __init__(self, delay: float = 0.0) -> None:
        self._server = _Server(delay)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The API root, as an endpoint's base URL names it (ends in ``/v1``)."""
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every Chat Completions body received, oldest first (a copy)."""
        with self._server._lock:
            return list(self._server.bodies)

    def requests_mentioning(self, text: str) -> list[dict[str, Any]]:
        """The bodies whose messages contain ``text`` anywhere."""
        return [
            body
            for body in self.requests
            if any(text in _text(m.get("content")) for m in body.get("messages") or [])
        ]

    def start(self) -> FakeUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def message_texts(messages: Sequence[Mapping[str, Any]], *roles: str) -> list[str]:
    """The texts of the messages with one of ``roles``, in order (to read ``requests``)."""
    return [_text(m.get("content")) for m in messages if m.get("role") in roles]
