"""The model asks the user (``ask_user``) in the chat: the question reaches every tab and a
reload, is answered over the socket (or by another process, after a restart), and a question
nobody answers in time tells the model so."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Tool
from agents.runs import RunManager
from agents.runs.questions import answer
from conversations.models import Conversation, Message, Question, Run
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

ASK = {"question": "Which colour?", "choices": ["red", "blue"], "free_text": True}


@pytest.fixture
def chat(user, editor) -> Conversation:
    profile = editor()
    profile.tools.add(Tool.objects.create(name="ask_user", kind="builtin"))
    return Conversation.objects.create(owner=user, title="Paint", profile=profile)


def tool_results(request) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] for m in request.json()["messages"] if m["role"] == "tool"
    }


@sync_to_async
def stored(
    conversation: Conversation,
) -> tuple[list[tuple[str, str, bool]], dict[str, str], list[str]]:
    """The questions (status, answer, applied), tool messages and run statuses, in order."""
    questions = [
        (q.status, q.answer, q.applied)
        for q in Question.objects.filter(conversation=conversation).order_by("pk")
    ]
    tools = dict(
        Message.objects.filter(conversation=conversation, role="tool").values_list(
            "tool_call_id", "content"
        )
    )
    runs = list(
        Run.objects.filter(conversation=conversation)
        .order_by("id")
        .values_list("status", flat=True)
    )
    return questions, tools, runs


async def test_a_question_reaches_every_tab_and_an_answer_frame_goes_on(user, chat, stub, manager):
    stub.enqueue(
        reply("openai", ["Let me ask."], calls=[("q1", "ask_user", ASK)]),
        reply("openai", ["Green, then."]),
    )
    first, _ = await connect(user, chat)
    second, _ = await connect(user, chat)
    await first.send_json_to({"type": "send", "content": "paint the wall"})
    frames = await until(first, "finish")
    asked = next(f for f in frames if f["type"] == "question")["questions"]
    assert [(q["call_id"], q["question"], q["choices"], q["status"]) for q in asked] == [
        ("q1", "Which colour?", ["red", "blue"], "pending")
    ]
    assert frames[-1]["result"]["stop"] == "awaiting_input"
    # A reload shows it too; a message sent meanwhile is refused: the run waits for the answer.
    reloaded, state = await connect(user, chat)
    assert [q["call_id"] for q in state["questions"]] == ["q1"]
    await reloaded.disconnect()
    assert await stored(chat) == (
        [("pending", "", False)],
        {"q1": json.dumps({"pending": "this question waits for the user's answer"})},
        ["awaiting_input"],
    )

    # Free text is allowed here: an answer outside the choices goes through.
    await second.send_json_to({"type": "answer", "id": asked[0]["id"], "answer": "green"})
    seen = await until(first, "question")
    assert (seen[-1]["answered"]["answer"], seen[-1]["questions"]) == ("green", [])
    went_on = frames[-1]["run"] + 1
    frames = await until(second, "finish", run=went_on)
    tools = [f for f in frames if f["type"] == "tool" and f["run"] == went_on]
    assert [(f["call"]["id"], f["result"]) for f in tools] == [
        ("q1", {"value": {"answer": "green"}})
    ]
    assert json.loads(tool_results(stub.requests[1])["q1"]) == {"answer": "green"}
    assert await stored(chat) == (
        [("answered", "green", True)],
        {"q1": json.dumps({"answer": "green"})},
        ["done", "done"],
    )
    # Answered once: a second answer frame is refused.
    await second.send_json_to({"type": "answer", "id": asked[0]["id"], "answer": "red"})
    error = await until(second, "error")
    assert error[-1]["code"] == "answered"
    await first.disconnect()
    await second.disconnect()


async def test_bad_answer_frames_are_refused_and_change_nothing(user, other, chat, stub, manager):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", {**ASK, "free_text": False})]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "paint"})
    frames = await until(socket, "finish")
    question = next(f for f in frames if f["type"] == "question")["questions"][0]["id"]
    for bad, code in (
        ({"type": "answer", "id": "x", "answer": "red"}, "invalid"),
        ({"type": "answer", "id": question, "answer": 3}, "invalid"),
        ({"type": "answer", "id": question, "answer": "green"}, "invalid"),
        ({"type": "answer", "id": question + 99, "answer": "red"}, "not_found"),
    ):
        await socket.send_json_to(bad)
        error = await socket.receive_json_from(timeout=5)
        assert (error["type"], error["code"]) == ("error", code)
    await socket.disconnect()
    # Another user's question is not found, as if it were not there.
    with pytest.raises(LookupError):
        await answer(manager, user_id=other.pk, username="bob", question_id=question, answer="red")
    assert (await stored(chat))[0] == [("pending", "", False)]


async def test_a_paused_run_is_answered_by_another_process_after_a_restart(
    user, chat, stub, manager
):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["Blue."]))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "paint"})
    await until(socket, "finish")
    await socket.disconnect()
    question = await sync_to_async(lambda: Question.objects.get().pk)()
    # Nothing of the paused run lives in memory: a new process takes the answer and goes on.
    restarted = RunManager()
    answered = await answer(
        restarted, user_id=user.pk, username="ada", question_id=question, answer="blue"
    )
    assert answered.continued_by is not None
    await restarted.wait(str(chat.pk))
    assert (await stored(chat))[2] == ["done", "done"]
    assert json.loads(tool_results(stub.requests[1])["q1"]) == {"answer": "blue"}


async def test_a_question_nobody_answers_in_time_tells_the_model_no_answer_came(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", calls=[("q1", "ask_user", {**ASK, "timeout_seconds": 60})]),
        reply("openai", ["I will pick blue."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "paint"})
    await until(socket, "finish")
    row = await sync_to_async(Question.objects.get)()
    assert row.expires is not None and row.expires > timezone.now() + timedelta(seconds=50)
    await manager.sweeper.approvals()
    assert len(stub.requests) == 1  # not due yet
    await sync_to_async(Question.objects.update)(expires=timezone.now() - timedelta(seconds=1))
    await manager.sweeper.approvals()
    frames = await until(socket, "finish")
    assert frames[-1]["result"]["content"] == "I will pick blue."
    result = json.loads(tool_results(stub.requests[1])["q1"])
    assert result["answer"] is None and result["note"].startswith("no answer came")
    questions, tools, runs = await stored(chat)
    assert (questions, runs) == ([("expired", "", True)], ["done", "done"])
    assert json.loads(tools["q1"]) == result
    await socket.disconnect()


async def test_a_malformed_question_is_answered_by_the_tool_with_what_is_wrong(
    user, chat, stub, manager
):
    stub.enqueue(
        reply("openai", calls=[("q1", "ask_user", {"question": "Pick", "free_text": False})]),
        reply("openai", ["Sorry."]),
    )
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "paint"})
    frames = await until(socket, "finish")
    assert frames[-1]["result"]["stop"] != "awaiting_input"
    assert "free_text" in tool_results(stub.requests[1])["q1"]
    assert (await stored(chat))[0] == []
    await socket.disconnect()
