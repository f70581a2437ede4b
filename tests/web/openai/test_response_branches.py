"""``previous_response_id`` naming an earlier response, through the official ``openai`` SDK:
the conversation branches there, and the original stays as it was."""

from __future__ import annotations

import json

import openai
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.models import Conversation, Message
from tests.providers.turns import reply
from tests.web.openai.test_responses import WEATHER

pytestmark = pytest.mark.django_db(transaction=True)


def said(request) -> list[str]:
    """What the model was sent, without the system prompt."""
    return [m["content"] for m in request.json()["messages"] if m["role"] != "system"]


def stored(conversation_id: str) -> list[tuple[str, str]]:
    rows = Message.objects.filter(conversation_id=conversation_id).order_by("position")
    return list(rows.values_list("message_id", "content"))


async def test_an_earlier_response_branches_and_the_original_chain_goes_on_unchanged(
    sdk, upstream, stub, alice
):
    stub.enqueue(*(reply("openai", [text]) for text in ("1", "2", "3", "b1", "b2", "4")))
    one = await sdk().responses.create(model="upstream", input="one")
    two = await sdk().responses.create(model="upstream", input="two", previous_response_id=one.id)
    three = await sdk().responses.create(
        model="upstream", input="three", previous_response_id=two.id
    )
    original = await sync_to_async(Conversation.objects.get)(owner=alice)
    kept = await sync_to_async(stored)(original.pk)

    branch = await sdk().responses.create(
        model="upstream", input="other", previous_response_id=one.id
    )
    assert branch.output_text == "b1" and branch.previous_response_id == one.id
    assert said(stub.requests[3]) == ["one", "1", "other"]
    # The branch goes on from its own latest response, streamed this time.
    stream = await sdk().responses.create(
        model="upstream", input="again", previous_response_id=branch.id, stream=True
    )
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "b2"
    assert said(stub.requests[4]) == ["one", "1", "other", "b1", "again"]

    assert await sync_to_async(stored)(original.pk) == kept
    four = await sdk().responses.create(
        model="upstream", input="four", previous_response_id=three.id
    )
    assert four.output_text == "4"
    assert said(stub.requests[5]) == ["one", "1", "two", "2", "three", "3", "four"]
    assert await sync_to_async(Conversation.objects.filter(owner=alice).count)() == 2


async def test_a_branch_from_client_calls_answered_later_waits_for_their_results_again(
    sdk, upstream, stub
):
    stub.enqueue(
        reply("openai", calls=[("call_9", "get_weather", {"city": "Oslo"})]),
        reply("openai", ["Cold."]),
        reply("openai", ["Warm."]),
    )
    asked = await sdk().responses.create(model="upstream", input="Weather?", tools=[WEATHER])
    for output in ("-3 C", "+20 C"):
        answered = await sdk().responses.create(
            model="upstream",
            previous_response_id=asked.id,
            input=[{"type": "function_call_output", "call_id": "call_9", "output": output}],
            tools=[WEATHER],
        )
    assert answered.output_text == "Warm."
    sent = stub.requests[2].json()["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "+20 C"}
    assert json.loads(sent[-2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}


async def test_refused_branches_leave_nothing_behind(sdk, upstream, stub, alice_key, bob, key_of):
    stub.enqueue(
        reply("openai", ["1"]), reply("openai", ["u"]), reply("openai", ["slow ", "2"], pause=0.2)
    )
    one = await sdk().responses.create(model="upstream", input="one")
    unstored = await sdk().responses.create(model="upstream", input="u", store=False)
    bobs = sdk(await sync_to_async(key_of)(bob))
    for client, previous in ((bobs, one.id), (sdk(), unstored.id), (sdk(), "resp_unknown")):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(
                model="upstream", input="more", previous_response_id=previous
            )
        assert caught.value.body["code"] == "previous_response_not_found"

    # While a later response of the conversation runs, branching waits for it.
    response = await AsyncClient(authorization=f"Bearer {alice_key}").post(
        "/v1/responses",
        {"model": "upstream", "input": "two", "previous_response_id": one.id, "stream": True},
        content_type="application/json",
    )
    with pytest.raises(openai.ConflictError):
        await sdk().responses.create(model="upstream", input="x", previous_response_id=one.id)
    assert b"response.completed" in b"".join([chunk async for chunk in response.streaming_content])
    # A start the branch refuses (no call waits for that output) drops the branch.
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().responses.create(
            model="upstream",
            previous_response_id=one.id,
            input=[{"type": "function_call_output", "call_id": "nope", "output": "x"}],
        )
    assert caught.value.body["code"] == "unknown_call_id"
    assert await sync_to_async(Conversation.objects.count)() == 2
