"""A conversation whose run waits for the user's answer to an ``ask_user`` question is not
forked (``409 busy``, as while a run is going): a copy would hold the call's placeholder with
no question to answer. Once answered and gone on, it forks."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import Tool
from agents.runs import run_manager
from conversations.models import Conversation, Question
from tests.providers.turns import reply

from .test_questions import ASK, answer, send

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(alice, editor) -> Conversation:
    """A conversation whose profile may ask its user (``ask_user``)."""
    profile = editor()
    profile.tools.add(Tool.objects.create(name="ask_user", kind="builtin"))
    return Conversation.objects.create(owner=alice, title="Report", profile=profile)


async def test_a_conversation_waiting_on_a_question_is_not_forked_until_it_is_answered(
    alice_key, chat, stub
):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["PDF it is."]))
    run = await send(client, chat, "write the report")
    assert run["status"] == "awaiting_input"
    base = f"/api/conversations/{chat.pk}"
    messages = (await client.get(f"{base}/messages/")).json()["messages"]

    for message in (messages[-1], messages[0]):
        response = await client.post(
            f"{base}/fork/", {"message": message["id"]}, content_type="application/json"
        )
        assert response.status_code == 409
        body = response.json()
        assert body["code"] == "busy" and "question" in body["detail"]
    assert await sync_to_async(Conversation.objects.count)() == 1
    assert await sync_to_async(Question.objects.filter(status="pending").count)() == 1

    question = await sync_to_async(lambda: Question.objects.get().pk)()
    code, _ = await answer(client, question, {"answer": "PDF"})
    assert code == 200
    await run_manager.wait(str(chat.pk))
    response = await client.post(
        f"{base}/fork/", {"message": messages[0]["id"]}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    assert (
        await sync_to_async(Question.objects.filter(conversation_id=response.json()["id"]).count)()
        == 0
    )
