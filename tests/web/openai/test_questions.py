"""A run that waits for the user's answer to a question (``ask_user``), seen through ``/v1`` with
the official SDK: never an empty success. Neither API has an item for a question, so both
answer ``409`` ``input_required`` naming the question and where to answer it (streamed after
some text: an ``error`` event); nothing is lost: the question is stored, answerable through
``/api/questions/``, and answering it continues the run."""

from __future__ import annotations

import json

import openai
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, Tool
from agents.runs import run_manager
from conversations.models import Message, Response, Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

ASK = {"question": "Which colour?", "choices": ["red", "blue"], "free_text": False}
PAINT = [{"role": "user", "content": "paint the fence"}]


@pytest.fixture
def asking(editor) -> AgentProfile:
    """The ``editor`` profile (on the stub model) with ``ask_user``."""
    profile = editor()
    profile.tools.add(Tool.objects.create(name="ask_user", kind="builtin"))
    return profile


@pytest.fixture
def api(alice_key) -> AsyncClient:
    return AsyncClient(authorization=f"Bearer {alice_key}")


async def waiting(api: AsyncClient) -> list[dict]:
    return (await api.get("/api/questions/")).json()["results"]


@sync_to_async
def runs_of(owner) -> list[tuple[str, str]]:
    return list(
        Run.objects.filter(conversation__owner=owner)
        .order_by("pk")
        .values_list("status", "content")
    )


@sync_to_async
def tool_results(owner) -> dict[str, str]:
    rows = Message.objects.filter(conversation__owner=owner, role="tool")
    return dict(rows.values_list("tool_call_id", "content"))


async def answer_and_go_on(api: AsyncClient, question: dict, text: str, owner) -> None:
    """Answer ``question`` through the REST API; wait for the run it continues."""
    answered = await api.post(
        f"/api/questions/{question['id']}/answer/",
        {"answer": text},
        content_type="application/json",
    )
    assert answered.status_code == 200, answered.content
    assert answered.json()["continued_by"] is not None
    await run_manager.wait(question["conversation"])


def assert_names(error: openai.APIError, question: dict) -> None:
    assert error.code == "input_required"
    assert f"question {question['id']}: 'Which colour?' (choices: red, blue)" in error.message
    assert f"POST /api/questions/{question['id']}/answer/" in error.message
    assert question["conversation"] in error.message


# -- chat completions -------------------------------------------------------------------------


async def test_a_question_is_a_conflict_naming_it_and_answering_it_continues_the_run(
    sdk, asking, stub, api, alice
):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["Blue it is."]))
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().chat.completions.create(model="editor", messages=PAINT)
    (question,) = await waiting(api)
    assert_names(caught.value, question)
    # Stored, nothing lost: the run waits, its question is pending, the model was asked once.
    assert await runs_of(alice) == [("awaiting_input", "")]
    assert (question["question"], question["status"]) == ("Which colour?", "pending")
    assert len(stub.requests) == 1

    await answer_and_go_on(api, question, "blue", alice)
    assert await runs_of(alice) == [("done", ""), ("done", "Blue it is.")]
    sent = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(sent["content"]) == {"answer": "blue"}
    assert json.loads((await tool_results(alice))["q1"]) == {"answer": "blue"}
    assert await waiting(api) == []


async def test_a_streamed_question_ends_with_the_error_then_done_and_no_finish_reason(
    sdk, asking, stub, api, alice
):
    stub.enqueue(reply("openai", ["Let me ask."], calls=[("q1", "ask_user", ASK)]))
    stream = await sdk().chat.completions.create(model="editor", messages=PAINT, stream=True)
    chunks = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            chunks.append(chunk)
    (question,) = await waiting(api)
    assert_names(caught.value, question)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Let me ask."
    assert all(c.choices[0].finish_reason is None for c in chunks)

    # On the wire (asked before any text): the error event, then [DONE], no finish_reason.
    stub.enqueue(reply("openai", calls=[("q2", "ask_user", ASK)]))
    raw = await api.post(
        "/v1/chat/completions",
        {"model": "editor", "messages": PAINT, "stream": True},
        content_type="application/json",
    )
    assert raw.status_code == 200
    body = b"".join([part async for part in raw.streaming_content]).decode()
    events = [line[6:] for line in body.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert (error["code"], error["type"]) == ("input_required", "invalid_request_error")
    assert all(
        choice["finish_reason"] is None
        for event in events[:-2]
        for choice in json.loads(event)["choices"]
    )
    # Both questions wait, each answerable; answering the first continues its own run.
    first, second = sorted(await waiting(api), key=lambda q: q["id"])
    assert f"question {second['id']}" in error["message"]
    stub.enqueue(reply("openai", ["Red."]))
    await answer_and_go_on(api, first, "red", alice)
    run = await sync_to_async(
        lambda: Run.objects.filter(conversation_id=first["conversation"]).order_by("-pk").first()
    )()
    assert (run.status, run.content) == ("done", "Red.")


# -- responses --------------------------------------------------------------------------------


async def test_a_response_that_asks_is_a_conflict_and_the_stored_response_is_not_a_success(
    sdk, asking, stub, api, alice
):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["Blue."]))
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().responses.create(model="editor", input="paint the fence")
    (question,) = await waiting(api)
    assert_names(caught.value, question)
    assert await runs_of(alice) == [("awaiting_input", "")]

    # The response is stored; read back it is incomplete, never an empty completion.
    stored = await sync_to_async(Response.objects.get)(owner=alice)
    fetched = await sdk().responses.retrieve(stored.id)
    assert (fetched.status, fetched.incomplete_details.reason) == ("incomplete", "input_required")
    assert fetched.output == []

    # A new input into the waiting conversation names the question too, and changes nothing.
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().responses.create(
            model="editor", previous_response_id=stored.id, input="and the gate"
        )
    assert_names(caught.value, question)
    assert caught.value.body["param"] == "previous_response_id"
    assert await runs_of(alice) == [("awaiting_input", "")]

    await answer_and_go_on(api, question, "blue", alice)
    assert await runs_of(alice) == [("done", ""), ("done", "Blue.")]
    sent = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(sent["content"]) == {"answer": "blue"}
    assert "and the gate" not in json.dumps(stub.requests[1].json()["messages"])


async def test_a_streamed_response_that_asks_first_is_a_conflict(sdk, asking, stub, api, alice):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["Blue."]))
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().responses.create(model="editor", input="paint the fence", stream=True)
    (question,) = await waiting(api)
    assert_names(caught.value, question)
    await answer_and_go_on(api, question, "blue", alice)
    assert (await runs_of(alice))[-1] == ("done", "Blue.")


async def test_a_streamed_response_that_asks_after_speaking_ends_with_the_error_event(
    sdk, asking, stub, api, alice
):
    stub.enqueue(reply("openai", ["Let me ask."], calls=[("q1", "ask_user", ASK)]))
    stream = await sdk().responses.create(model="editor", input="paint the fence", stream=True)
    events = []
    with pytest.raises(openai.APIError) as caught:
        async for event in stream:
            events.append(event)
    (question,) = await waiting(api)
    assert_names(caught.value, question)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == (
        "Let me ask."
    )
    assert not any(e.type == "response.completed" for e in events)
    # Stored: what it said before asking, and the run waiting on the question.
    assert await runs_of(alice) == [("awaiting_input", "")]
    said = Message.objects.filter(conversation__owner=alice, role="assistant")
    assert await sync_to_async(list)(said.values_list("content", flat=True)) == ["Let me ask."]
