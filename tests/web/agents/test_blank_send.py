"""A whitespace-only submission continues (seed 004: it "behaves exactly like /continue": no
message is appended and the existing context runs), over the websocket as over REST."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from conversations.models import Message, Run

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def stored(conversation) -> list[tuple[str, str]]:
    rows = Message.objects.filter(conversation=conversation).order_by("position")
    return [(row.role, row.content) for row in rows]


@pytest.mark.parametrize("blank", ["", "   ", " \n\t "])
async def test_a_blank_send_answers_the_history_without_a_new_message(
    user, conversation, fast_demo, manager, blank
):
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "hello there"})
    await until(socket, "finish")
    before = await stored(conversation)
    assert [role for role, _ in before] == ["user", "assistant"]

    await socket.send_json_to({"type": "send", "content": blank, "nonce": "n2"})

    frames = await until(socket, "finish")
    started = frames[0]
    assert started["type"] == "started" and started["message"] is None
    assert started["nonce"] == "n2"
    after = await stored(conversation)
    assert after[:2] == before
    assert [role for role, _ in after] == ["user", "assistant", "assistant"]
    assert await sync_to_async(Run.objects.filter(conversation=conversation).count)() == 2
    await socket.disconnect()


async def test_a_blank_send_on_an_empty_conversation_is_nothing_to_continue(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "  "})
    frame = (await until(socket, "error"))[-1]
    assert frame["code"] == "nothing_to_continue"
    assert await stored(conversation) == []
    assert not await sync_to_async(Run.objects.exists)()
    await socket.disconnect()
