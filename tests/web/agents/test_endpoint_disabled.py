"""Over the websocket, a send to a chosen model whose endpoint is disabled is refused with an
``error`` frame coded ``model_unavailable``, as a deleted one is; nothing is stored, no other
model answers."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import ProviderEndpoint
from conversations.models import Conversation, Message, Run

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def switched_off(user, demo) -> Conversation:
    """The user's conversation that chose ``off/echo``, whose endpoint was disabled since."""
    ProviderEndpoint.objects.create(name="off", kind="scripted")
    conversation = Conversation.objects.create(
        owner=user, title="first", profile=demo, model="off/echo"
    )
    ProviderEndpoint.objects.filter(name="off").update(enabled=False)
    return conversation


async def test_a_send_to_a_model_whose_endpoint_is_disabled_gets_a_model_unavailable_error(
    user, switched_off, fast_demo, manager
):
    socket, _ = await connect(user, switched_off)
    await socket.send_json_to({"type": "send", "content": "hello"})
    frames = await until(socket, "error")
    assert [frame["type"] for frame in frames] == ["error"]
    assert frames[0]["code"] == "model_unavailable"
    assert "off/echo" in frames[0]["message"]
    assert not await sync_to_async(Message.objects.filter(conversation=switched_off).exists)()
    assert not await sync_to_async(Run.objects.filter(conversation=switched_off).exists)()
    await socket.disconnect()


def test_the_admin_lists_and_edits_an_endpoints_enabled_flag(admin_client, db):
    endpoint = ProviderEndpoint.objects.create(name="off", kind="scripted")
    listing = admin_client.get("/admin/agents/providerendpoint/")
    assert listing.status_code == 200 and b"column-enabled" in listing.content
    page = admin_client.get(f"/admin/agents/providerendpoint/{endpoint.pk}/change/")
    assert page.status_code == 200 and b'name="enabled"' in page.content
