"""The per-user cap on runs at once is refused clearly at every front door (issue 17, finding
16): the chat socket answers ``too_many_runs`` and stays usable, the REST API and the
OpenAI-compatible endpoints answer 429, and the refused message is not stored."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import ApiKey
from conversations.models import Conversation, Message
from tests.web.agents.test_consumers import connect

pytestmark = pytest.mark.django_db(transaction=True)

CAP = "at most 1 at once"


@pytest.fixture
async def one_run_going(user, conversation, demo, manager, settings) -> AsyncIterator[None]:
    """The user's one allowed run, streaming slowly in ``conversation`` until the test ends."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.05, "MAX_RUNS_PER_USER": 1}
    held = str(conversation.id)
    await manager.start(user_id=user.id, conversation_id=held, content="slowly " * 200)
    yield
    manager.abort(held)
    await manager.wait(held)


@pytest.fixture
def other_conversation(user, demo) -> Conversation:
    return Conversation.objects.create(owner=user, title="second", profile=demo)


def _user_messages(conversation: Conversation) -> int:
    return Message.objects.filter(conversation=conversation, role="user").count()


async def test_the_socket_answers_too_many_runs_and_stays_usable(
    user, other_conversation, one_run_going
):
    socket, _ = await connect(user, other_conversation)
    await socket.send_json_to({"type": "send", "content": "one more"})
    frame = await socket.receive_json_from(timeout=5)
    assert (frame["type"], frame.get("code")) == ("error", "too_many_runs"), frame["type"]
    assert CAP in frame["message"]
    await socket.send_json_to({"type": "resync"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    await socket.disconnect()
    assert await sync_to_async(_user_messages)(other_conversation) == 0


async def test_the_rest_api_and_the_openai_endpoints_answer_429(
    user, other_conversation, one_run_going
):
    key = (await sync_to_async(ApiKey.objects.issue)(user=user, name="cap"))[1]
    client = AsyncClient(authorization=f"Bearer {key}")

    rest = await client.post(
        f"/api/conversations/{other_conversation.pk}/messages/",
        {"content": "one more"},
        content_type="application/json",
    )
    assert rest.status_code == 429, rest.content
    assert rest.json()["code"] == "too_many_runs" and CAP in rest.json()["detail"]
    assert await sync_to_async(_user_messages)(other_conversation) == 0

    openai = await client.post(
        "/v1/chat/completions",
        {"model": "demo", "messages": [{"role": "user", "content": "one more"}]},
        content_type="application/json",
    )
    assert openai.status_code == 429, openai.content
    error = openai.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "too_many_runs")
    assert CAP in error["message"]
