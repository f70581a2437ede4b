"""Chat completions as OpenAI sends them: the ``chat.completion`` body and the
``chat.completion.chunk`` events of a stream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import OpenAIError, error_body
from .outcome import ClientCall, Delta, Outcome

__all__ = ["DONE", "Completion", "error_chunk", "usage_body"]

DONE = b"data: [DONE]\n\n"


def usage_body(usage: Mapping[str, int] | None) -> dict[str, int]:
    usage = usage or {}
    return {
        "prompt_tokens": usage.get("prompt", 0),
        "completion_tokens": usage.get("completion", 0),
        "total_tokens": usage.get("total", 0),
    }


def _call(call: ClientCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _encode(payload: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def error_chunk(error: OpenAIError) -> bytes:
    """An error in the middle of a stream (its status was sent): the SDKs raise on it."""
    return _encode(error_body(error))


@dataclass(frozen=True, slots=True)
class Completion:
    """One chat completion: its id, time and model, for the body or each chunk."""

    id: str
    created: int
    model: str

    def body(self, outcome: Outcome) -> dict[str, Any]:
        """The whole ``chat.completion``."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": outcome.text if outcome.text or not outcome.calls else None,
            "refusal": None,
        }
        if outcome.reasoning:
            message["reasoning_content"] = outcome.thinking
        if outcome.calls:
            message["tool_calls"] = [_call(call) for call in outcome.calls]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": outcome.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": usage_body(outcome.usage),
        }

    def chunk(
        self,
        delta: Mapping[str, Any] | None,
        *,
        finish_reason: str | None = None,
        usage: Mapping[str, int] | None = None,
        include_usage: bool = False,
    ) -> bytes:
        """One ``chat.completion.chunk`` event; ``delta=None`` is the usage chunk (no
        choices)."""
        payload: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": (
                []
                if delta is None
                else [
                    {
                        "index": 0,
                        "delta": dict(delta),
                        "finish_reason": finish_reason,
                        "logprobs": None,
                    }
                ]
            ),
        }
        if include_usage:
            # With ``include_usage`` every chunk has the field; only the last one fills it.
            payload["usage"] = usage_body(usage) if delta is None else None
        return _encode(payload)

    def delta_chunk(self, delta: Delta, include_usage: bool) -> bytes:
        """The chunk for one piece of the answer."""
        if delta.kind == "content":
            body: dict[str, Any] = {"content": delta.text}
        elif delta.kind == "reasoning":
            body = {"reasoning_content": delta.text}
        else:
            assert delta.call is not None
            call = delta.call
            body = {"tool_calls": [{"index": call.index, **_call(call)}]}
        return self.chunk(body, include_usage=include_usage)
