"""Over the websocket, a send to a chosen model whose endpoint is gone is refused with an
``error`` frame coded ``model_unavailable``; nothing is stored, no other model answers."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import ProviderEndpoint
from conversations.models import Conversation, Message, Run

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def orphaned(user, demo) -> Conversation:
    """The user's conversation that chose ``gone/echo``, whose endpoint was deleted since."""
    ProviderEndpoint.objects.create(name="gone", kind="scripted")
    conversation = Conversation.objects.create(
        owner=user, title="first", profile=demo, model="gone/echo"
    )
    ProviderEndpoint.objects.filter(name="gone").delete()
    return conversation


async def test_a_send_to_a_model_whose_endpoint_is_gone_gets_a_model_unavailable_error(
    user, orphaned, fast_demo, manager
):
    socket, _ = await connect(user, orphaned)
    await socket.send_json_to({"type": "send", "content": "hello"})
    frames = await until(socket, "error")
    assert [frame["type"] for frame in frames] == ["error"]
    assert frames[0]["code"] == "model_unavailable"
    assert "gone/echo" in frames[0]["message"]
    assert not await sync_to_async(Message.objects.filter(conversation=orphaned).exists)()
    assert not await sync_to_async(Run.objects.filter(conversation=orphaned).exists)()
    await socket.disconnect()
