"""Responses as OpenAI sends them: the ``response`` object, its output items, and the
streaming events (``response.created`` ... ``response.completed``).

``ResponseWriter`` builds the output items from a run's answer as it arrives; the events of
a stream and the object of ``GET /v1/responses/{id}`` come from the same items, so both say
the same.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .approvals import SERVER_LABEL, HeldCall
from .errors import OpenAIError, error_body
from .outcome import Delta, Outcome

__all__ = ["ResponseWriter", "Status"]

Status = Literal["in_progress", "completed", "incomplete", "failed"]


def _usage(usage: Mapping[str, int] | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.get("prompt", 0),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.get("completion", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.get("total", 0),
    }


def _event(kind: str, payload: Mapping[str, Any]) -> bytes:
    data = json.dumps({"type": kind, **payload}, ensure_ascii=False)
    return f"event: {kind}\ndata: {data}\n\n".encode()


@dataclass
class ResponseWriter:
    """One response's output items as its run's answer arrives; ``add`` returns the stream
    events for each piece."""

    id: str
    created: int
    model: str
    outcome: Outcome
    echo: Mapping[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)
    sequence: int = 0
    completed_at: int | None = None
    _open: dict[str, Any] | None = None

    # -- events -------------------------------------------------------------------------------

    def _emit(self, out: list[bytes], kind: str, **payload: Any) -> None:
        out.append(_event(kind, {"sequence_number": self.sequence, **payload}))
        self.sequence += 1

    def opening(self) -> bytes:
        """``response.created`` and ``response.in_progress``."""
        out: list[bytes] = []
        body = self.body("in_progress")
        self._emit(out, "response.created", response=body)
        self._emit(out, "response.in_progress", response=body)
        return b"".join(out)

    def add(self, deltas: Iterable[Delta]) -> bytes:
        """Fold pieces of the answer into items; their events."""
        out: list[bytes] = []
        for delta in deltas:
            if delta.kind == "content":
                self._text(out, delta.text, "message")
            elif delta.kind == "reasoning":
                self._text(out, delta.text, "reasoning")
            else:
                assert delta.call is not None
                self._close(out)
                call = delta.call
                item = {
                    "type": "function_call",
                    "id": f"fc_{call.id}",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": "",
                    "status": "in_progress",
                }
                index = len(self.items)
                self.items.append(item)
                self._emit(out, "response.output_item.added", output_index=index, item=dict(item))
                self._emit(
                    out,
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=call.arguments,
                )
                item.update(arguments=call.arguments, status="completed")
                self._emit(
                    out,
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    arguments=call.arguments,
                )
                self._emit(out, "response.output_item.done", output_index=index, item=item)
        return b"".join(out)

    def hold(self, held: Iterable[HeldCall]) -> bytes:
        """One ``mcp_approval_request`` item per call the run holds for approval, as OpenAI's
        hosted MCP tools ask for one; their events."""
        out: list[bytes] = []
        self._close(out)
        for call in held:
            item = {
                "type": "mcp_approval_request",
                "id": call.request_id,
                "name": call.tool,
                "arguments": call.arguments,
                "server_label": SERVER_LABEL,
            }
            index = len(self.items)
            self.items.append(item)
            self._emit(out, "response.output_item.added", output_index=index, item=dict(item))
            self._emit(out, "response.output_item.done", output_index=index, item=dict(item))
        return b"".join(out)

    def error(self, error: OpenAIError) -> bytes:
        """The open item's end, then an ``error`` event that ends a stream whose status was
        sent already (the SDKs raise on its ``error``); no ``response.completed`` follows."""
        out: list[bytes] = []
        self._close(out)
        body = error_body(error)
        self._emit(out, "error", code=error.code, message=error.message, param=error.param, **body)
        return b"".join(out)

    def closing(self, at: float | None = None) -> bytes:
        """The open item's end, then ``response.completed`` / ``incomplete`` / ``failed``
        (the run ended at ``at``, a Unix time; now when not given)."""
        out: list[bytes] = []
        self._close(out)
        self.completed_at = int(at if at is not None else time.time())
        status = self.status
        kind = {
            "completed": "response.completed",
            "incomplete": "response.incomplete",
            "failed": "response.failed",
        }.get(status, "response.completed")
        self._emit(out, kind, response=self.body(status))
        return b"".join(out)

    def _text(self, out: list[bytes], text: str, kind: Literal["message", "reasoning"]) -> None:
        item = self._open
        if item is None or item["type"] != kind:
            self._close(out)
            item = self._start(out, kind)
        index = len(self.items) - 1
        part = item["content"][0]
        part["text"] += text
        name = (
            "response.output_text.delta" if kind == "message" else "response.reasoning_text.delta"
        )
        extra: dict[str, Any] = {"logprobs": []} if kind == "message" else {}
        self._emit(
            out, name, item_id=item["id"], output_index=index, content_index=0, delta=text, **extra
        )

    def _start(self, out: list[bytes], kind: Literal["message", "reasoning"]) -> dict[str, Any]:
        index = len(self.items)
        if kind == "message":
            item: dict[str, Any] = {
                "type": "message",
                "id": f"msg_{self.id[5:]}_{index}",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
        else:
            item = {
                "type": "reasoning",
                "id": f"rs_{self.id[5:]}_{index}",
                "summary": [],
                "content": [],
            }
            part = {"type": "reasoning_text", "text": ""}
        self.items.append(item)
        self._emit(out, "response.output_item.added", output_index=index, item=_copy(item))
        item["content"].append(part)
        if kind == "message":
            self._emit(
                out,
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=dict(part),
            )
        self._open = item
        return item

    def _close(self, out: list[bytes]) -> None:
        item = self._open
        if item is None:
            return
        self._open = None
        index = len(self.items) - 1
        part = item["content"][0]
        if item["type"] == "message":
            item["status"] = "completed"
            self._emit(
                out,
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=part["text"],
                logprobs=[],
            )
            self._emit(
                out,
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
        else:
            self._emit(
                out,
                "response.reasoning_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=part["text"],
            )
        self._emit(out, "response.output_item.done", output_index=index, item=_copy(item))

    # -- the object ---------------------------------------------------------------------------

    @property
    def status(self) -> Status:
        outcome = self.outcome
        if not outcome.finished:
            return "in_progress"
        if outcome.failed:
            return "failed"
        return "incomplete" if outcome.incomplete_reason is not None else "completed"

    def body(self, status: Status | None = None) -> dict[str, Any]:
        """The ``response`` object (its items as they stand)."""
        status = status or self.status
        outcome = self.outcome
        reason = outcome.incomplete_reason if status == "incomplete" else None
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "completed_at": self.completed_at if status == "completed" else None,
            "status": status,
            "model": self.model,
            "output": [_copy(item) for item in self.items] if status != "in_progress" else [],
            "error": (
                {"code": "server_error", "message": "The model server failed to answer."}
                if status == "failed"
                else None
            ),
            "incomplete_details": {"reason": reason} if reason is not None else None,
            "usage": _usage(outcome.usage) if status != "in_progress" else None,
            "parallel_tool_calls": True,
            **self.echo,
        }


def _copy(item: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(item))
