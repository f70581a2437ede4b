"""Whole model turns in each wire format, for scripting a ``StubServer`` one turn per request.

A later agent-through-provider test can enqueue a tool turn and then an answer::

    stub.enqueue(reply("openai", calls=[("c1", "add", {"a": 1})]), reply("openai", ["4"]))

and read back what the agent sent on each request from ``stub.requests``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .server import Reply, ndjson, sse

Call = tuple[str, str, Mapping[str, Any]]
Frames = Callable[..., list[bytes]]


def openai_turn(
    content: Sequence[str] = (),
    calls: Sequence[Call] = (),
    *,
    end: bool = True,
    usage: tuple[int, int] = (10, 5),
) -> list[bytes]:
    """Chat Completions chunks: content deltas, whole tool calls, finish, usage, ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}

    events = [chunk({"content": part}) for part in content]
    for index, (call_id, name, arguments) in enumerate(calls):
        function = {"name": name, "arguments": json.dumps(arguments)}
        events.append(
            chunk({"tool_calls": [{"index": index, "id": call_id, "function": function}]})
        )
    if not end:
        return sse(*events)
    events.append(chunk({}, "tool_calls" if calls else "stop"))
    prompt, completion = usage
    total = prompt + completion
    events.append(
        {
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": total,
            },
        }
    )
    return sse(*events, done=True)


def anthropic_turn(
    content: Sequence[str] = (),
    calls: Sequence[Call] = (),
    *,
    end: bool = True,
    usage: tuple[int, int] = (10, 5),
) -> list[bytes]:
    """Messages API events: one text block, one ``tool_use`` block per call, then the stop."""
    prompt, completion = usage
    start = {"type": "message_start", "message": {"usage": {"input_tokens": prompt}}}
    events: list[dict[str, Any]] = [start]
    index = 0
    if content:
        block = {"type": "text", "text": ""}
        events.append({"type": "content_block_start", "index": 0, "content_block": block})
        for part in content:
            delta = {"type": "text_delta", "text": part}
            events.append({"type": "content_block_delta", "index": 0, "delta": delta})
        if end or calls:
            events.append({"type": "content_block_stop", "index": 0})
        index = 1
    for offset, (call_id, name, arguments) in enumerate(calls):
        at = index + offset
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        events.append({"type": "content_block_start", "index": at, "content_block": block})
        events.append({"type": "content_block_delta", "index": at, "delta": delta})
        events.append({"type": "content_block_stop", "index": at})
    if end:
        reason = "tool_use" if calls else "end_turn"
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason},
                "usage": {"output_tokens": completion},
            }
        )
        events.append({"type": "message_stop"})
    return sse(*events, named=True)


def ollama_turn(
    content: Sequence[str] = (),
    calls: Sequence[Call] = (),
    *,
    end: bool = True,
    usage: tuple[int, int] = (10, 5),
) -> list[bytes]:
    """``/api/chat`` lines: content lines, one line of tool calls, the ``done`` line."""

    def line(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"model": "m", "message": {"role": "assistant", **message}, **extra}

    lines = [line({"content": part}, done=False) for part in content]
    if calls:
        wire = [
            {"id": call_id, "function": {"name": name, "arguments": dict(arguments)}}
            for call_id, name, arguments in calls
        ]
        lines.append(line({"content": "", "tool_calls": wire}, done=False))
    if end:
        prompt, completion = usage
        lines.append(
            line(
                {"content": ""},
                done=True,
                done_reason="stop",
                prompt_eval_count=prompt,
                eval_count=completion,
            )
        )
    return ndjson(*lines)


TURNS: dict[str, Frames] = {
    "openai": openai_turn,
    "anthropic": anthropic_turn,
    "ollama": ollama_turn,
}


def reply(
    protocol: str,
    content: Sequence[str] = (),
    calls: Sequence[Call] = (),
    *,
    end: bool = True,
    **options: Any,
) -> Reply:
    """A ``Reply`` carrying one whole turn of ``protocol``; ``options`` go to ``Reply``."""
    content_type = "application/x-ndjson" if protocol == "ollama" else "text/event-stream"
    options.setdefault("content_type", content_type)
    return Reply(TURNS[protocol](content, calls, end=end), **options)
