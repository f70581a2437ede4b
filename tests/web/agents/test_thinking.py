"""An answer's reasoning is stored with its message, with how long it took: what the chat
showed live is what a reload shows (the ``state`` frame), for stopped and interrupted runs too.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.runs.interruptions import close_interrupted
from conversations.models import Message, Run
from conversations.stores import DjangoConversationStore

from .test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)

FILES_THOUGHT = "The user asks about files, so I will list the workspace."
ECHO_THOUGHT = "A demo reply: echo the message and explain."


@pytest.fixture
def quick_demo(demo, settings):
    """The demo model with a short per-word delay: its thinking takes measurable time."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.004}
    return demo


def assistants(messages: list[dict]) -> list[dict]:
    return [message for message in messages if message["role"] == "assistant"]


def thinking_ms(frames: list[dict]) -> list[int]:
    """How long each thinking block streamed, as the live chat showed it (in ms)."""
    return [
        round(frame["seconds"] * 1000)
        for frame in frames
        if frame["type"] == "block_end" and frame["block"] == "thinking"
    ]


async def test_each_answer_keeps_the_thinking_of_its_own_request_after_a_reload(
    user, conversation, quick_demo, manager
):
    socket, _ = await connect(user, conversation)
    # Two requests: one thinks and calls the workspace tool, the next answers without thinking.
    await socket.send_json_to({"type": "send", "content": "Which files do I have?"})
    frames = await frames_until(socket, "finish")
    streamed = "".join(frame["content"] for frame in frames if frame["type"] == "think")
    assert streamed == FILES_THOUGHT
    (took,) = thinking_ms(frames)
    assert took > 0
    committed = [m for f in frames if f["type"] == "committed" for m in f["messages"]]
    called, answered = assistants(committed)
    assert called["calls"] and (called["thinking"], called["thinking_ms"]) == (FILES_THOUGHT, took)
    assert (answered["thinking"], answered["thinking_ms"]) == ("", None)
    await socket.send_json_to({"type": "send", "content": "thanks"})
    second = await frames_until(socket, "finish")
    await socket.disconnect()

    _, state = await connect(user, conversation)
    shown = [(m["thinking"], m["thinking_ms"]) for m in assistants(state["messages"])]
    assert shown == [
        (FILES_THOUGHT, took),
        ("", None),
        (ECHO_THOUGHT, thinking_ms(second)[0]),
    ]
    # Beside the kit's messages, never in them: the model is not sent its reasoning back.
    snapshot = await DjangoConversationStore().get(str(conversation.pk))
    assert snapshot is not None
    assert all("thinking" not in message for message in snapshot["messages"])


async def test_a_stopped_answer_keeps_the_thinking_it_showed(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "hello there"})
    frames = await frames_until(socket, "token")  # thinking is over, the answer has begun
    await socket.send_json_to({"type": "abort"})
    frames += await frames_until(socket, "finish")
    await socket.disconnect()
    (took,) = thinking_ms(frames)

    _, state = await connect(user, conversation)
    (cut,) = assistants(state["messages"])
    assert cut["content"] and (cut["thinking"], cut["thinking_ms"]) == (ECHO_THOUGHT, took)


def _dead_run(conversation) -> Run:
    """A run whose server died mid-answer: its last checkpoint and a stale heartbeat."""
    stale = timezone.now() - timedelta(minutes=5)
    return Run.objects.create(
        conversation=conversation,
        status=Run.Status.RUNNING,
        content="Half an ans",
        thinking="A thought cut short",
        started=stale,
        heartbeat=stale,
    )


async def test_an_interrupted_answer_keeps_its_checkpointed_thinking(user, conversation, manager):
    await sync_to_async(_dead_run)(conversation)
    assert len(await sync_to_async(close_interrupted)(60.0)) == 1
    _, state = await connect(user, conversation)
    (kept,) = assistants(state["messages"])
    assert (kept["content"], kept["thinking"], kept["thinking_ms"]) == (
        "Half an ans",
        "A thought cut short",
        None,
    )
    assert state["last_run"]["status"] == "interrupted"
    stored = await sync_to_async(Message.objects.get)(message_id=kept["id"])
    assert stored.thinking == "A thought cut short"
