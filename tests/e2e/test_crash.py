"""kill -9 in the middle of a stream, then a plain ``daphne`` (no ``bootstrap``): the run ends
as interrupted and keeps all but about a second of the answer the client saw, and the chat
shows it so, with Continue."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.processes import stop_group

from .conftest import SETUP_CODE, _server_env, _shell, start_daphne

SEED = """
import json
from django.contrib.auth import get_user_model
from agents.models import ApiKey
from conversations.services import create_conversation
alice = get_user_model().objects.get(username="alice")
key = ApiKey.objects.issue(user=alice, name="crash")[1]
conversation = create_conversation(user=alice, title="crash")
print(json.dumps({"key": key, "conversation": str(conversation.id)}))
"""
WORD_SECONDS = 0.05
STREAMED_BEFORE_KILL = 2.0  # seconds of answer: a checkpoint (every second) has landed


pytestmark = pytest.mark.e2e


def test_a_killed_server_keeps_the_streamed_answer_and_a_plain_restart_closes_the_run(
    tmp_path: Path, browser: Any
) -> None:
    env = _server_env(tmp_path / "crash.sqlite3")
    env["ORKESTREL_DEMO_WORD_DELAY"] = str(WORD_SECONDS)
    made = json.loads(_shell(env, SETUP_CODE).strip().splitlines()[-1])
    seeded = json.loads(_shell(env, SEED).strip().splitlines()[-1])
    headers = {"Authorization": f"Bearer {seeded['key']}"}
    log = tmp_path / "daphne.log"
    first, url = start_daphne(env, log)
    streamed = ""
    run_id = None
    try:
        with (
            httpx.Client(base_url=url, headers=headers, timeout=30) as client,
            client.stream(
                "POST",
                f"/api/conversations/{seeded['conversation']}/messages/",
                json={"content": "word " * 300},
                headers={"Accept": "text/event-stream"},
            ) as response,
        ):
            began = None
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                frame = json.loads(line[6:])
                run_id = frame.get("run", run_id)
                if frame["type"] == "token":
                    began = began or time.monotonic()
                    streamed += frame["content"]
                if began is not None and time.monotonic() - began > STREAMED_BEFORE_KILL:
                    os.killpg(first.pid, signal.SIGKILL)
                    break
    finally:
        stop_group(first)
    assert run_id is not None and len(streamed) > 50

    second, url = start_daphne(env, log)  # a plain restart: no ``bootstrap``
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            deadline = time.monotonic() + 40
            while True:
                run = client.get(f"/api/runs/{run_id}/").json()
                if run["status"] != "running" or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            transcript = client.get(f"/api/conversations/{seeded['conversation']}/messages/")
        # What the user sees after the restart: the kept text, marked, with Continue.
        context = browser.new_context(base_url=url)
        try:
            context.add_cookies(
                [{"name": made["cookie"], "value": made["sessions"]["alice"], "url": url}]
            )
            page = context.new_page()
            page.goto(f"/c/{seeded['conversation']}/")
            note = page.get_by_test_id("turn-note")
            expect(note).to_contain_text("interrupted")
            expect(note.get_by_test_id("retry")).to_have_text("Continue")
            expect(page.locator("#transcript > .msg-assistant").last).to_contain_text(
                " ".join(streamed.split()[:5])
            )
        finally:
            context.close()
    finally:
        stop_group(second)
    assert run["status"] == "interrupted" and run["stop_reason"] == "interrupted"
    kept = run["content"]
    assert streamed.startswith(kept)
    # At most about a second of words lost (the checkpoint period), with room for a slow box.
    assert len(streamed.split()) - len(kept.split()) <= 1.5 / WORD_SECONDS
    last = transcript.json()["messages"][-1]
    assert (last["role"], last["content"]) == ("assistant", kept)
