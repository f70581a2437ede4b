"""A run handed to a Celery worker: what the web process decided, as the task's JSON.

The web process stores the user message and opens the run (``prepare_run``) as it does for a
run of its own; the worker builds the live agent from the database, and needs only what the
start had in hand besides: who and where, the stored message's payload, the client's nonce,
the title, the run's overrides and the approval decisions the run applies first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from conversations.approvals import Decided
from orkestrel.core import NamedToolChoice, ResponseFormat, ToolChoice, ToolDefinition
from orkestrel.protocol import MessagePayload, StartedFrame, encode

from ..runtime.overrides import RunOverrides, Sampling
from ..usage.charge import KeyRef

__all__ = ["Handoff"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Handoff:
    """Everything a worker needs to run a run the web process opened."""

    run_id: int
    user_id: int
    conversation_id: str
    message: MessagePayload | None
    nonce: str | None
    title: str
    overrides: RunOverrides | None = None
    decisions: tuple[Decided, ...] = ()
    # The interrupted run this one continues (a lost worker's), which it announces.
    continues: int | None = None
    # The API key the start came with: the run's usage is charged to it.
    key: KeyRef | None = None

    def started(self) -> dict[str, Any]:
        """The run's first frame, exactly as the worker sends it."""
        return encode(
            StartedFrame(
                run=self.run_id,
                seq=1,
                message=self.message,
                nonce=self.nonce,
                title=self.title,
            )
        )

    def to_data(self) -> dict[str, Any]:
        """The hand-off as JSON (a Celery task's argument)."""
        return {
            "run": self.run_id,
            "user": self.user_id,
            "conversation": self.conversation_id,
            "message": self.message,
            "nonce": self.nonce,
            "title": self.title,
            "overrides": _overrides_data(self.overrides) if self.overrides else None,
            "decisions": [
                {
                    "call_id": d.call_id,
                    "tool": d.tool,
                    "arguments": dict(d.arguments),
                    "approved": d.approved,
                    "reason": d.reason,
                    "by": d.by,
                    "expired": d.expired,
                    "answer": d.answer,
                }
                for d in self.decisions
            ],
            "continues": self.continues,
            "key": self.key.to_data() if self.key is not None else None,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Handoff:
        overrides = data.get("overrides")
        return cls(
            run_id=int(data["run"]),
            user_id=int(data["user"]),
            conversation_id=str(data["conversation"]),
            message=cast(MessagePayload | None, data.get("message")),
            nonce=data.get("nonce"),
            title=str(data.get("title") or ""),
            overrides=_overrides_from(overrides) if overrides else None,
            decisions=tuple(Decided(**d) for d in data.get("decisions") or ()),
            continues=data.get("continues"),
            key=KeyRef.from_data(data.get("key")),
        )


def _overrides_data(overrides: RunOverrides) -> dict[str, Any]:
    sampling = overrides.sampling
    return {
        "client_tools": [tool.to_dict() for tool in overrides.client_tools],
        "sampling": {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
            "stop": list(sampling.stop) if sampling.stop is not None else None,
            "presence_penalty": sampling.presence_penalty,
            "frequency_penalty": sampling.frequency_penalty,
        },
        "schema": dict(overrides.schema) if overrides.schema is not None else None,
        "think": overrides.think,
        "max_tokens": overrides.max_tokens,
        "system": overrides.system,
        "request": dict(overrides.request) if overrides.request is not None else None,
        "tool_choice": _choice_data(overrides.tool_choice),
        "parallel_tool_calls": overrides.parallel_tool_calls,
        "response_format": _format_data(overrides.response_format),
    }


def _choice_data(choice: ToolChoice | None) -> str | dict[str, str] | None:
    if isinstance(choice, NamedToolChoice):
        return {"type": choice.type, "name": choice.name}
    return choice


def _choice_from(data: Any) -> ToolChoice | None:
    if isinstance(data, dict):
        return NamedToolChoice(str(data["name"]))
    return cast(ToolChoice | None, data)


def _format_data(answer: ResponseFormat | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    return {
        "type": answer.type,
        "schema": dict(answer.schema) if answer.schema is not None else None,
        "name": answer.name,
        "description": answer.description,
        "strict": answer.strict,
    }


def _format_from(data: dict[str, Any] | None) -> ResponseFormat | None:
    if data is None:
        return None
    return ResponseFormat(
        type=data["type"],
        schema=data.get("schema"),
        name=data.get("name"),
        description=data.get("description"),
        strict=data.get("strict"),
    )


def _overrides_from(data: dict[str, Any]) -> RunOverrides:
    sampling = dict(data.get("sampling") or {})
    if sampling.get("stop") is not None:
        sampling["stop"] = tuple(sampling["stop"])
    return RunOverrides(
        client_tools=tuple(
            ToolDefinition(t["name"], t.get("description"), t.get("parameters"), t.get("strict"))
            for t in data.get("client_tools") or ()
        ),
        sampling=Sampling(**sampling),
        schema=data.get("schema"),
        think=data.get("think"),
        max_tokens=data.get("max_tokens"),
        system=data.get("system"),
        request=data.get("request"),
        tool_choice=_choice_from(data.get("tool_choice")),
        parallel_tool_calls=data.get("parallel_tool_calls"),
        response_format=_format_from(data.get("response_format")),
    )
