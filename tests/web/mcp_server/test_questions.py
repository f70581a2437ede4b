"""The model asks the user (``ask_user``) at ``/mcp``: a client that can answer a form is asked
(an input-required result on the 2026-07-28 revision, an elicitation during the call before
it), its answer is the call's result and the run goes on; a client that cannot (or a form
nobody answers in time) gets an ``isError`` result naming the question, which stays
waiting."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from mcp.types import ElicitRequestParams, ElicitResult

from agents.mcp_server import calls
from agents.models import Tool
from conversations.models import Question
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

ASK = {"question": "Which colour?", "choices": ["red", "blue"], "free_text": False}


@pytest.fixture
def asking(editor):
    profile = editor()
    profile.tools.add(Tool.objects.create(name="ask_user", kind="builtin"))
    return profile


def answering(*results: ElicitResult):
    """An elicitation callback giving ``results`` in turn; what it was asked is kept."""
    asked: list[ElicitRequestParams] = []
    queue = list(results)

    async def callback(context, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return queue.pop(0)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


@pytest.mark.parametrize(
    ("mode", "revision"),
    [("auto", "2026-07-28"), ("legacy", "2025-11-25")],
    ids=["input-required", "elicitation"],
)
async def test_a_client_that_answers_gives_the_model_its_answer(mcp, asking, stub, mode, revision):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]), reply("openai", ["Blue."]))
    answer = answering(ElicitResult(action="accept", content={"answer": "blue"}))
    async with mcp(elicitation=answer, mode=mode) as client:
        # An input-required result; before 2026-07-28 an elicitation during the call.
        assert client.protocol_version == revision
        result = await client.call_tool("editor", {"message": "paint"})
    assert not result.is_error and result.content[0].text == "Blue."
    (asked,) = answer.asked
    assert "Which colour?" in asked.message
    assert asked.requested_schema["properties"]["answer"]["enum"] == ["red", "blue"]
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(tool["content"]) == {"answer": "blue"}
    row = await sync_to_async(Question.objects.get)()
    assert (row.status, row.answer, row.applied) == ("answered", "blue", True)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_cannot_answer_is_told_which_question_waits(mcp, asking, stub, mode):
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]))
    async with mcp(mode=mode) as client:
        result = await client.call_tool("editor", {"message": "paint"})
    row = await sync_to_async(Question.objects.get)()
    assert result.is_error and row.status == "pending"
    assert result.structured_content["error"]["code"] == "input_required"
    assert result.structured_content["questions"] == [row.pk]
    assert "/api/questions/" in result.content[0].text


async def test_a_form_nobody_answers_during_the_call_ends_the_call_and_the_question_waits(
    mcp, asking, stub, monkeypatch
):
    monkeypatch.setattr(calls, "FORM_SECONDS", 0.5)
    stub.enqueue(reply("openai", calls=[("q1", "ask_user", ASK)]))
    shown = asyncio.Event()

    async def never(context, params: ElicitRequestParams) -> ElicitResult:
        shown.set()
        await asyncio.Event().wait()  # the person walked away
        raise AssertionError("unreachable")

    async with mcp(elicitation=never, mode="legacy") as client:
        result = await client.call_tool("editor", {"message": "paint"})
    assert shown.is_set()
    row = await sync_to_async(Question.objects.get)()
    assert result.is_error and row.status == "pending"
    assert result.structured_content["error"]["code"] == "input_required"
    assert result.structured_content["questions"] == [row.pk]
