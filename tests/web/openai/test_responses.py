"""``/v1/responses`` through the official ``openai`` SDK: stored conversations continued by
``previous_response_id``, streamed events, retrieval and deletion."""

from __future__ import annotations

import json

import openai
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.models import Conversation, Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


async def test_a_response_then_its_continuation_share_one_stored_conversation(
    sdk, upstream, stub, alice
):
    stub.enqueue(reply("openai", ["Hello ", "Ada."]), reply("openai", ["You are Ada."]))
    first = await sdk().responses.create(model="upstream", input="I am Ada.")
    assert first.status == "completed" and first.output_text == "Hello Ada."
    assert first.id.startswith("resp_") and first.usage.total_tokens == 15
    second = await sdk().responses.create(
        model="upstream", input="Who am I?", previous_response_id=first.id
    )
    assert second.output_text == "You are Ada." and second.previous_response_id == first.id
    # The client sent only the new input: the history came from the stored conversation.
    sent = [(m["role"], m["content"]) for m in stub.requests[1].json()["messages"]]
    assert sent[-3:] == [("user", "I am Ada."), ("assistant", "Hello Ada."), ("user", "Who am I?")]
    count = await sync_to_async(Conversation.objects.filter(owner=alice).count)()
    assert count == 1


async def test_a_streamed_response_sends_the_reference_event_sequence(sdk, upstream, stub):
    stub.enqueue(reply("openai", ["Hi", " there"]))
    stream = await sdk().responses.create(model="upstream", input="hello", stream=True)
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.output_item.added" in kinds and "response.output_text.done" in kinds
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert "".join(deltas) == "Hi there"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    completed = events[-1].response
    assert completed.output_text == "Hi there" and completed.status == "completed"
    fetched = await sdk().responses.retrieve(completed.id)
    assert fetched.output_text == "Hi there" and fetched.status == "completed"
    assert completed.completed_at and fetched.completed_at
    assert fetched.created_at <= fetched.completed_at


async def test_instructions_follow_the_profile_prompt_for_that_response_only(sdk, upstream, stub):
    stub.enqueue(reply("openai", ["ok"]), reply("openai", ["ok"]))
    first = await sdk().responses.create(
        model="upstream", input="one", instructions="Answer in French."
    )
    await sdk().responses.create(model="upstream", input="two", previous_response_id=first.id)
    one, two = (request.json()["messages"] for request in stub.requests)
    assert one[0] == {"role": "system", "content": "Answer in French."}
    assert all("French" not in str(message) for message in two)


async def test_a_client_function_call_round_trip_over_the_stored_conversation(sdk, upstream, stub):
    stub.enqueue(reply("openai", calls=[("call_9", "get_weather", {"city": "Oslo"})]))
    first = await sdk().responses.create(model="upstream", input="Weather?", tools=[WEATHER])
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.call_id == "call_9" and json.loads(call.arguments) == {"city": "Oslo"}
    assert first.status == "completed"
    stub.enqueue(reply("openai", ["Cold."]))
    second = await sdk().responses.create(
        model="upstream",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_9", "output": "-3 C"}],
        tools=[WEATHER],
    )
    assert second.output_text == "Cold."
    sent = stub.requests[1].json()["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "-3 C"}
    with pytest.raises(openai.BadRequestError):
        await sdk().responses.create(
            model="upstream",
            previous_response_id=second.id,
            input=[{"type": "function_call_output", "call_id": "nope", "output": "x"}],
        )


async def test_json_schema_format_reaches_the_model(sdk, upstream, stub):
    stub.enqueue(reply("openai", ['{"n": 1}']))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    made = await sdk().responses.create(
        model="upstream",
        input="a number",
        text={"format": {"type": "json_schema", "name": "n", "schema": schema}},
    )
    assert json.loads(made.output_text) == {"n": 1}
    assert stub.requests[0].json()["response_format"]["json_schema"]["schema"] == schema


async def test_deleted_unstored_and_foreign_responses_are_not_found(
    sdk, upstream, stub, bob, key_of
):
    stub.enqueue(reply("openai", ["a"]), reply("openai", ["b"]))
    kept = await sdk().responses.create(model="upstream", input="keep")
    with pytest.raises(openai.NotFoundError):
        await sdk(await sync_to_async(key_of)(bob)).responses.retrieve(kept.id)
    unstored = await sdk().responses.create(model="upstream", input="forget", store=False)
    with pytest.raises(openai.NotFoundError):
        await sdk().responses.retrieve(unstored.id)
    with pytest.raises(openai.BadRequestError):
        await sdk().responses.create(
            model="upstream", input="more", previous_response_id=unstored.id
        )
    # Its run is still on record for the operator.
    assert await sync_to_async(Run.objects.count)() == 2
    await sdk().responses.delete(kept.id)
    with pytest.raises(openai.NotFoundError):
        await sdk().responses.retrieve(kept.id)
    with pytest.raises(openai.NotFoundError):
        await sdk().responses.delete(kept.id)


async def test_continuing_a_conversation_that_is_still_running_is_a_conflict(
    sdk, upstream, stub, alice_key
):
    stub.enqueue(reply("openai", ["slow ", "answer"], pause=0.2))
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.post(
        "/v1/responses",
        {"model": "upstream", "input": "take your time", "stream": True},
        content_type="application/json",
    )
    chunks = aiter(response.streaming_content)
    created = json.loads((await anext(chunks)).decode().split("data: ", 1)[1].split("\n")[0])
    running = created["response"]["id"]
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().responses.create(
            model="upstream", input="and now?", previous_response_id=running
        )
    assert caught.value.body["param"] == "previous_response_id"
    rest = b"".join([chunk async for chunk in chunks])
    assert b"response.completed" in rest


async def test_conversations_from_the_openai_endpoints_say_so_in_the_rest_api(
    sdk, upstream, stub, alice_key
):
    stub.enqueue(reply("openai", ["hi"]))
    await sdk().responses.create(model="upstream", input="hello")
    listed = await AsyncClient(authorization=f"Bearer {alice_key}").get("/api/conversations/")
    (conversation,) = listed.json()["results"]
    assert conversation["origin"] == "openai" and conversation["title"] == "hello"


async def test_a_response_cut_by_max_output_tokens_is_incomplete_with_the_reason(
    sdk, upstream, stub
):
    stub.enqueue(reply("openai", ["word " * 8] * 10))
    made = await sdk().responses.create(model="upstream", input="talk", max_output_tokens=5)
    assert made.status == "incomplete"
    assert made.incomplete_details.reason == "max_output_tokens"
    assert 0 < len(made.output_text) < len("word " * 80)


async def test_a_model_failing_mid_stream_ends_the_stream_with_response_failed(sdk, upstream, stub):
    stub.enqueue(reply("openai", ["half ", "an ", "answer"], end=False, drop_after=2))
    stream = await sdk().responses.create(model="upstream", input="go", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.failed"
    assert events[-1].response.error.code == "server_error"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta")
