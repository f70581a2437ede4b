"""A run's chunk stream mapped to frames, alone: no run, no database, a given clock."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from agents.runs.chunk_frames import (
    TEXT_FRAME_CHARS,
    ChunkFrames,
    Commit,
    TakePending,
)
from agents.runs.frame_log import FrameLog
from agents.runs.inbox import Turned
from agents.runs.lifecycle import Executing, RequestStarted
from agents.runtime.builtins.skills import NAME as SKILLS_TOOL
from agents.runtime.reports import ToolReport
from conversations.writer import Thought
from orkestrel.core import (
    Message,
    ThinkChunk,
    TokenChunk,
    TokenUsage,
    ToolCall,
    ToolChunk,
    ToolResult,
    UsageChunk,
)
from orkestrel.protocol import ContextPayload, SkillsFrame, context_payload
from orkestrel.providers.base import CallDelta


class PerThousand:
    """A meter at a cent per thousand tokens, with a 1,000-token window; 2 spent before."""

    def cost(self, usage: TokenUsage) -> Decimal | None:
        return Decimal(usage.total) / 100_000

    def cost_after(self, spent: TokenUsage) -> Decimal | None:
        return Decimal(2) + Decimal(spent.total) / 100_000

    def context(self, total: TokenUsage) -> ContextPayload:
        return context_payload(1000, total.latest_prompt)


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run() -> tuple[ChunkFrames, list[dict[str, Any]], Clock]:
    delivered: list[dict[str, Any]] = []
    clock = Clock()
    return ChunkFrames(FrameLog(7, delivered.append), PerThousand(), clock), delivered, clock


def _types(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["type"] for frame in frames]


def test_text_waits_for_the_flush_and_goes_out_as_one_frame_after_its_block_start():
    chunks, frames, _ = _run()
    for piece in ("Hel", "lo", " there"):
        assert chunks.take(TokenChunk(piece)) is None
    assert _types(frames) == ["block_start"]
    assert chunks.buffered
    chunks.flush()
    assert frames[-1] == {"type": "token", "run": 7, "seq": 2, "content": "Hello there"}
    assert not chunks.buffered
    assert chunks.content == "Hello there"


def test_reasoning_goes_out_before_the_answer_in_one_flush():
    chunks, frames, _ = _run()
    chunks.take(ThinkChunk("hmm"))
    chunks.take(TokenChunk("Yes."))
    chunks.flush()
    sent = [(f["type"], f.get("content")) for f in frames if f["type"] in ("think", "token")]
    assert sent == [("think", "hmm"), ("token", "Yes.")]
    assert (chunks.thinking, chunks.content) == ("hmm", "Yes.")


def test_any_other_frame_sends_the_text_before_it_first():
    chunks, frames, clock = _run()
    chunks.take(RequestStarted(0))
    chunks.take(TokenChunk("Hi"))
    clock.now += 0.25
    chunks.take(UsageChunk(TokenUsage(10, 2, 12)))
    assert _types(frames) == [
        "request_start",
        "block_start",
        "token",
        "block_end",
        "request_done",
        "usage",
    ]
    assert [frame["seq"] for frame in frames] == [1, 2, 3, 4, 5, 6]
    assert frames[3]["content"] == "Hi"
    assert frames[3]["seconds"] == 0.25


def test_text_longer_than_a_frame_holds_goes_in_several_frames():
    chunks, frames, _ = _run()
    chunks.take(TokenChunk("x" * (TEXT_FRAME_CHARS + 5)))
    chunks.flush()
    assert [len(f["content"]) for f in frames if f["type"] == "token"] == [TEXT_FRAME_CHARS, 5]


def test_pieces_of_calls_close_the_text_block_and_go_out_one_frame_per_call():
    chunks, frames, _ = _run()
    chunks.take(TokenChunk("Let me look."))
    chunks.take(CallDelta(0, "c1", "read", '{"pa'))
    assert _types(frames) == ["block_start", "token", "block_end"]
    chunks.take(CallDelta(0, None, None, 'th": "a"}'))
    chunks.take(CallDelta(1, "c2", "list", "{}"))
    chunks.flush()
    calls = [(f["index"], f["id"], f["name"], f["arguments"]) for f in frames[3:]]
    assert calls == [(0, "c1", "read", '{"path": "a"}'), (1, "c2", "list", "{}")]


def test_a_calls_result_shows_on_its_card_and_asks_for_a_commit():
    chunks, frames, clock = _run()
    call = ToolCall("c1", "read", {"path": "a"})
    chunks.take(Executing((call,)))
    assert chunks.running.running(clock.now)[0]["call"]["id"] == "c1"
    write = chunks.take(ToolChunk(call, ToolResult("c1", "read", value="text")))
    assert write == Commit(skills=None)
    assert _types(frames) == ["tool_execute", "tool"]
    assert frames[1]["result"] == {"value": "text"}
    assert [tool["call"]["id"] for tool in chunks.tools] == ["c1"]
    assert chunks.running.running(clock.now) == []


def test_skills_the_model_activated_go_with_the_commit():
    chunks, _, _ = _run()
    call = ToolCall("c1", SKILLS_TOOL, {"activate": ["review"]})
    value = {"activated": ["review"], "active": ["style", "review"]}
    write = chunks.take(ToolChunk(call, ToolResult("c1", SKILLS_TOOL, value=value)))
    assert write == Commit(skills=SkillsFrame(skills=["style", "review"]))


async def test_a_turn_marker_closes_the_text_block_and_asks_to_take_pending_messages():
    chunks, frames, _ = _run()
    chunks.take(TokenChunk("Done."))
    turned = Turned(asyncio.get_running_loop().create_future())
    assert chunks.take(turned) == TakePending(turned)
    assert _types(frames) == ["block_start", "token", "block_end"]


def test_usage_is_priced_and_folded_into_the_run_and_conversation_totals():
    chunks, frames, _ = _run()
    chunks.total = TokenUsage(100, 50, 150)
    chunks.take(UsageChunk(TokenUsage(400, 100, 500, latest_prompt=400)))
    chunks.take(UsageChunk(TokenUsage(600, 400, 1000, latest_prompt=600)))
    first, second = [f for f in frames if f["type"] == "usage"]
    assert first["usage"]["cost"] == "0.005"
    assert first["total"]["total"] == 650
    assert first["total"]["cost"] == "2.005"
    assert first["context"] == {"used": 400, "window": 1000, "approximate": False}
    assert second["total"]["total"] == 1650
    assert second["total"]["cost"] == "2.015"
    assert second["context"]["used"] == 600
    assert chunks.spent == TokenUsage(1000, 500, 1500)


def test_a_report_shows_on_its_running_call_and_one_about_no_running_call_shows_nothing():
    chunks, frames, _ = _run()
    call = ToolCall("c1", "fetch", {"url": "u"})
    chunks.take(Executing((call,)))
    chunks.take(ToolReport("fetch", {"url": "u"}, {"progress": 0.5}, key=object()))
    chunks.take(ToolReport("fetch", {"url": "other"}, {"progress": 0.1}, key=object()))
    progress = [f for f in frames if f["type"] == "tool_progress"]
    assert [(f["call"], f["display"]) for f in progress] == [("c1", {"progress": 0.5})]


def test_each_assistant_message_keeps_the_reasoning_of_its_own_request():
    chunks, _, clock = _run()
    chunks.take(RequestStarted(0))
    chunks.take(ThinkChunk("plan"))
    clock.now += 1.5
    chunks.take(TokenChunk("First."))
    chunks.take(RequestStarted(1))
    chunks.take(ThinkChunk("more"))
    assert chunks.unclaimed_thinking == "planmore"
    user = Message("u1", "user", "go")
    answer = Message("a1", "assistant", "First.")
    assert chunks.claim([user, answer]) == {"a1": Thought("plan", 1500)}
    assert chunks.unclaimed_thinking == "more"
    assert chunks.thinking == "planmore"


def test_a_stored_answer_leaves_the_in_flight_answer_empty():
    chunks, _, _ = _run()
    chunks.take(TokenChunk("Stored."))
    chunks.answer_stored()
    chunks.take(TokenChunk("Next"))
    assert chunks.content == "Next"


def test_an_item_of_no_known_kind_is_refused_not_dropped():
    chunks, _, _ = _run()
    with pytest.raises(AssertionError):
        chunks.take("a stray item")
