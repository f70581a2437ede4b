"""Slash commands: what a submission asks for (pure), and the run service acting on it."""

from __future__ import annotations

import pytest

from agents.runs.commands import Compact, Continue, Say, interpret

from .test_consumers import connect, frames_until


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("  hello  ", Say("hello")),
        ("", Continue()),
        ("   \n ", Continue()),
        ("/continue", Continue()),
        ("/continue please", Say("/continue please")),
        ("/compact", Compact(None)),
        ("/compact   the budget talk ", Compact("the budget talk")),
        ("//compact", Say("/compact")),
        ("/unknown words", Say("/unknown words")),
        ("/compacted", Say("/compacted")),
    ],
)
def test_a_submission_is_read_as_its_command(text, command):
    assert interpret(text) == command


def test_a_message_with_images_is_always_sent():
    assert interpret("/compact", images=True) == Say("/compact")
    assert interpret("", images=True) == Say("")


@pytest.mark.django_db(transaction=True)
async def test_over_the_socket_continue_answers_and_refusals_say_why(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "/continue", "nonce": "n1"})
    refused = await frames_until(socket, "error")
    assert refused[-1]["code"] == "nothing_to_continue"
    await socket.send_json_to({"type": "send", "content": "/compact", "nonce": "n2"})
    assert (await frames_until(socket, "error"))[-1]["code"] == "nothing_to_compact"
    await socket.send_json_to({"type": "send", "content": "hello", "nonce": "n3"})
    await frames_until(socket, "finish")
    await socket.send_json_to({"type": "send", "content": " /continue ", "nonce": "n4"})
    frames = await frames_until(socket, "finish")
    started = next(frame for frame in frames if frame["type"] == "started")
    assert started["message"] is None and started["nonce"] == "n4"
    assert frames[-1]["result"]["stop"] == "done"
    await socket.disconnect()
