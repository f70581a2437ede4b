"""A client frame the transport would still carry, but near its 1 MiB limit, is refused with
``too_large`` by the app itself (issue 17, finding 2): the app's own limit sits under the
websocket server's, so an oversized frame gets an answer instead of a dead socket."""

from __future__ import annotations

import base64
import json

import pytest
from asgiref.sync import sync_to_async

from conversations.models import Message
from tests.web.agents.test_consumers import connect

pytestmark = pytest.mark.django_db(transaction=True)

# Daphne's default ``--websocket-max-message-size``: what a plain ``daphne`` accepts.
TRANSPORT_LIMIT = 1024 * 1024


def send_frame(size: int) -> str:
    """A valid ``send`` frame of exactly ``size`` bytes: text and one inline PNG."""
    frame = {"type": "send", "content": "look", "images": [""]}
    room = size - len(json.dumps(frame))
    # Base64 comes in blocks of 4 characters; the text pads the rest.
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * (room // 4 * 3 - 8)
    frame["images"] = [base64.b64encode(png).decode()]
    frame["content"] += "!" * (size - len(json.dumps(frame)))
    text = json.dumps(frame)
    assert len(text.encode()) == size
    return text


async def test_a_frame_just_under_the_transports_limit_is_answered_too_large(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    await socket.send_to(text_data=send_frame(TRANSPORT_LIMIT - 1024))
    frame = await socket.receive_json_from(timeout=5)
    assert (frame["type"], frame.get("code")) == ("error", "too_large"), frame["type"]
    assert not await sync_to_async(Message.objects.exists)()
    # The socket lives on.
    await socket.send_json_to({"type": "resync"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    await socket.disconnect()
