"""The model asks the user (``ask_user``), through the REST API: the run pauses as
``awaiting_input``, the question is listed and shown, an answer goes on as the call's result,
and what is stored after each step is checked."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import Tool
from agents.runs import run_manager
from conversations.models import Conversation, Message, Question, Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

ASK = {"question": "Which format?", "choices": ["PDF", "Markdown"], "free_text": False}


@pytest.fixture
def chat(alice, editor) -> Conversation:
    profile = editor()
    profile.tools.add(Tool.objects.create(name="ask_user", kind="builtin"))
    return Conversation.objects.create(owner=alice, title="Report", profile=profile)


async def send(client: AsyncClient, conversation: Conversation, text: str) -> dict:
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": text},
        content_type="application/json",
    )
    body = b"".join([chunk async for chunk in response.streaming_content])
    assert response.status_code == 200, body
    return json.loads(body)


async def answer(client: AsyncClient, question: int, body: object) -> tuple[int, dict]:
    response = await client.post(
        f"/api/questions/{question}/answer/", body, content_type="application/json"
    )
    return response.status_code, response.json()


@sync_to_async
def stored(conversation: Conversation) -> tuple[list[tuple[str, str, str, bool]], dict[str, str]]:
    """The conversation's questions (text, status, answer, applied) and tool messages."""
    questions = [
        (q.text, q.status, q.answer, q.applied)
        for q in Question.objects.filter(conversation=conversation).order_by("pk")
    ]
    tools = dict(
        Message.objects.filter(conversation=conversation, role="tool").values_list(
            "tool_call_id", "content"
        )
    )
    return questions, tools


async def test_a_question_pauses_the_run_and_its_answer_is_the_calls_result(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["PDF it is."]))
    run = await send(client, chat, "write the report")
    assert (run["status"], run["stop_reason"]) == ("awaiting_input", "awaiting_input")
    assert (await client.get(f"/api/runs/{run['id']}/")).json()["status"] == "awaiting_input"
    assert len(stub.requests) == 1  # the model was not asked again
    listed = (await client.get("/api/questions/")).json()["results"]
    assert [
        (q["call_id"], q["question"], q["choices"], q["free_text"], q["status"]) for q in listed
    ] == [("q1", "Which format?", ["PDF", "Markdown"], False, "pending")]
    shown = (await client.get(f"/api/questions/{listed[0]['id']}/")).json()
    assert shown == listed[0]
    # Waiting: the stored history holds the placeholder, the question is pending.
    questions, tools = await stored(chat)
    assert questions == [("Which format?", "pending", "", False)] and "pending" in tools["q1"]

    # Not one of the choices: refused, nothing changes.
    code, body = await answer(client, listed[0]["id"], {"answer": "Word"})
    assert (code, body["code"]) == (400, "invalid") and "answer" in body["errors"]
    assert (await stored(chat))[0] == [("Which format?", "pending", "", False)]

    code, answered = await answer(client, listed[0]["id"], {"answer": "PDF"})
    assert (code, answered["status"], answered["answer"], answered["answered_by"]) == (
        200,
        "answered",
        "PDF",
        "alice",
    )
    assert answered["continued_by"] not in (None, run["id"])
    await run_manager.wait(str(chat.pk))
    after = await sync_to_async(Run.objects.get)(pk=answered["continued_by"])
    assert (after.status, after.content) == ("done", "PDF it is.")
    sent = {m.get("tool_call_id"): m["content"] for m in stub.requests[1].json()["messages"]}
    assert json.loads(sent["q1"]) == {"answer": "PDF"}
    # Stored after it: the answer in place of the placeholder, the question answered and taken.
    questions, tools = await stored(chat)
    assert questions == [("Which format?", "answered", "PDF", True)]
    assert json.loads(tools["q1"]) == {"answer": "PDF"}
    assert (await client.get("/api/questions/")).json()["results"] == []
    # Answered once: a second answer is refused and changes nothing.
    code, body = await answer(client, listed[0]["id"], {"answer": "Markdown"})
    assert (code, body["code"]) == (409, "answered")
    assert (await stored(chat))[0] == [("Which format?", "answered", "PDF", True)]


async def test_free_text_is_taken_where_the_question_allows_it(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    stub.enqueue(
        reply("openai", calls=[("q1", "ask_user", {"question": "Your name?"})]),
        reply("openai", ["Hello."]),
    )
    await send(client, chat, "greet me")
    question = (await client.get("/api/questions/")).json()["results"][0]
    assert (question["choices"], question["free_text"]) == ([], True)
    assert (await answer(client, question["id"], {"answer": "   "}))[0] == 400
    code, _ = await answer(client, question["id"], {"answer": " Ada Lovelace "})
    assert code == 200
    await run_manager.wait(str(chat.pk))
    assert (await stored(chat))[0] == [("Your name?", "answered", "Ada Lovelace", True)]


async def test_another_users_question_is_a_404_and_stays_unanswered(
    alice_key, bob, issue_key, chat, stub
):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]))
    await send(AsyncClient(authorization=f"Bearer {alice_key}"), chat, "write the report")
    question = await sync_to_async(lambda: Question.objects.get().pk)()
    key = await sync_to_async(issue_key)(bob, scopes=("read", "run"))
    client = AsyncClient(authorization=f"Bearer {key}")
    assert (await client.get(f"/api/questions/{question}/")).status_code == 404
    assert (await client.get("/api/questions/?status=all")).json()["results"] == []
    code, body = await answer(client, question, {"answer": "PDF"})
    assert (code, body["code"]) == (404, "not_found")
    assert (await stored(chat))[0] == [("Which format?", "pending", "", False)]
    assert len(stub.requests) == 1
