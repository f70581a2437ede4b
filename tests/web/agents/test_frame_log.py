"""A run's frame log alone: numbering, delivery, replay after a ``seq``, the wait for more."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.runs.frame_log import FrameLog
from orkestrel.protocol import NoticeFrame, TokenFrame, WaitFrame


def _log() -> tuple[FrameLog, list[dict[str, Any]]]:
    delivered: list[dict[str, Any]] = []
    return FrameLog(7, delivered.append), delivered


def test_frames_are_numbered_from_one_in_order_and_delivered_as_logged():
    log, delivered = _log()
    log.emit(TokenFrame, content="Hel")
    log.emit(NoticeFrame, code="quota_warning", message="almost out")
    log.emit(TokenFrame, content="lo")
    assert [(f["type"], f["run"], f["seq"]) for f in log.frames] == [
        ("token", 7, 1),
        ("notice", 7, 2),
        ("token", 7, 3),
    ]
    assert log.seq == 3
    assert delivered == log.frames


def test_a_frame_that_cannot_be_built_leaves_no_gap_in_seq():
    log, delivered = _log()
    log.emit(TokenFrame, content="a")
    with pytest.raises(TypeError):
        log.emit(WaitFrame, seconds=1.0)  # its status and reason are missing
    log.emit(TokenFrame, content="b")
    assert [f["seq"] for f in delivered] == [1, 2]


async def test_a_follower_replays_the_frames_after_its_seq():
    log, _ = _log()
    for text in ("a", "b", "c"):
        log.emit(TokenFrame, content=text)
    assert [f["content"] for f in await log.after(1) or []] == ["b", "c"]
    assert [f["content"] for f in await log.after(0) or []] == ["a", "b", "c"]


async def test_a_follower_that_read_everything_waits_for_the_next_frame():
    log, _ = _log()
    log.emit(TokenFrame, content="a")
    follower = asyncio.ensure_future(log.after(1))
    await asyncio.sleep(0)  # the follower's turn: it waits
    assert not follower.done()
    log.emit(TokenFrame, content="b")
    assert [(f["seq"], f["content"]) for f in await follower or []] == [(2, "b")]


async def test_an_idle_follower_hears_none_once_idle_seconds_passed():
    log, _ = _log()
    log.emit(TokenFrame, content="a")
    assert await log.after(1, idle=0.01) is None


async def test_once_settled_a_follower_that_read_everything_gets_nothing_more():
    log, _ = _log()
    log.emit(TokenFrame, content="a")
    follower = asyncio.ensure_future(log.after(1))
    await asyncio.sleep(0)
    log.settle()
    assert await follower == []
    assert log.settled
    # A follower behind still gets the rest, then nothing.
    assert [f["seq"] for f in await log.after(0) or []] == [1]
    assert await log.after(1) == []
