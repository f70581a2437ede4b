"""The chat socket's text (issue 30, item 5): a NUL anywhere in a frame (PostgreSQL holds no
NUL, and the protocol checked only for lone surrogates) is refused with an ``invalid`` error
frame, and nothing is stored; the socket lives on."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from conversations.models import Message
from tests.web.agents.test_consumers import connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"type": "send", "content": "a\x00b"}, "send: 'content' holds a NUL character."),
        (
            {"type": "send", "content": "hi", "nonce": "\x00"},
            "send: 'nonce' holds a NUL character.",
        ),
        ({"type": "compact", "focus": "f\x00"}, "compact: 'focus' holds a NUL character."),
        (
            {"type": "approve", "id": 1, "decision": "deny", "reason": "no\x00"},
            "approve: 'reason' holds a NUL character.",
        ),
        (
            {"type": "approve", "id": 1, "decision": "approve", "arguments": {"k": ["\x00"]}},
            "approve: 'arguments.k[0]' holds a NUL character.",
        ),
    ],
)
async def test_a_nul_in_a_frame_is_an_invalid_error_and_stores_nothing(
    user, conversation, manager, frame, message
):
    socket, _ = await connect(user, conversation)
    await socket.send_to(text_data=json.dumps(frame))
    answer = await socket.receive_json_from(timeout=5)
    assert (answer["type"], answer["code"], answer["message"]) == ("error", "invalid", message)
    await socket.send_json_to({"type": "resync"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    assert not await sync_to_async(Message.objects.filter(conversation=conversation).exists)()
    await socket.disconnect()
