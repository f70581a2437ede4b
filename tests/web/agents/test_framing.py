"""Outgoing frames stay under the websocket server's message limit (Daphne's 1 MiB)."""

from __future__ import annotations

import json
import logging

import pytest

from agents.framing import MAX_OUTGOING_BYTES, fitted
from agents.runs import RunManager
from agents.runs.chunk_frames import TEXT_FRAME_CHARS
from orkestrel.protocol import TokenFrame

pytestmark = pytest.mark.django_db(transaction=True)


def message(i: int, size: int) -> dict:
    return {
        "id": f"m{i}",
        "role": "user" if i % 2 == 0 else "assistant",
        "content": "x" * size,
        "html": "<p>" + "x" * size + "</p>",
        "calls": None,
        "tool_call_id": None,
        "images_count": 0,
    }


def test_a_frame_under_the_limit_goes_out_as_it_is():
    frame = TokenFrame(run=1, seq=2, content="hé")
    assert json.loads(fitted(frame, 1000)) == {"type": "token", "run": 1, "seq": 2, "content": "hé"}


def test_a_committed_frame_over_the_limit_goes_without_its_html(caplog):
    frame = {"type": "committed", "run": 1, "seq": 5, "messages": [message(1, 600)]}
    with caplog.at_level(logging.WARNING):
        text = fitted(frame, 1000)
    sent = json.loads(text)
    assert sent["messages"][0]["html"] == "" and sent["messages"][0]["content"] == "x" * 600
    assert "without its HTML" in caplog.text


def test_a_state_over_the_limit_keeps_the_newest_messages_and_counts_the_rest_as_earlier():
    frame = {"type": "state", "messages": [message(i, 300) for i in range(40)], "earlier": 3}
    text = fitted(frame, 4000)
    assert len(text.encode()) <= 4000
    sent = json.loads(text)
    assert sent["messages"][-1]["id"] == "m39"
    assert sent["earlier"] == 3 + 40 - len(sent["messages"])


def test_a_frame_that_cannot_shrink_is_dropped_and_logged(caplog):
    with caplog.at_level(logging.WARNING):
        assert fitted(TokenFrame(run=1, seq=3, content="y" * 5000), 1000) is None
    assert "dropped a token frame" in caplog.text


async def test_a_huge_delta_goes_out_as_several_numbered_frames_each_under_the_limit(
    user, conversation, demo, settings
):
    settings.ORKESTREL = {
        **settings.ORKESTREL,
        "DEMO_WORD_DELAY": 0.0,
        "MAX_MESSAGE_CHARS": 1_000_000,
    }
    manager = RunManager()
    frames = []

    async def collect(frame):
        frames.append(frame)

    manager.subscribe(str(conversation.id), collect)
    huge = "word " * 60_000  # echoed back by the demo model: 300,000 characters
    await manager.start(user_id=user.id, conversation_id=str(conversation.id), content=huge)
    await manager.wait(str(conversation.id))
    await manager.drain()
    tokens = [f for f in frames if f["type"] == "token"]
    # Split where the frames are made: full frames, then the rest.
    assert max(len(f["content"]) for f in tokens) == TEXT_FRAME_CHARS
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert "".join(f["content"] for f in tokens) == frames[-1]["result"]["content"]
    assert all(fitted(f, MAX_OUTGOING_BYTES) is not None for f in frames if f["type"] != "started")
