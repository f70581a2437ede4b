"""``/v1/models`` and ``/v1/chat/completions`` through the official ``openai`` SDK."""

from __future__ import annotations

import json

import openai
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AuthorityPolicy, Scope
from agents.runs import run_service
from conversations.models import Conversation, Message, Run
from tests.providers.server import Reply
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


async def test_models_lists_the_enabled_profiles_by_slug(sdk, demo, upstream):
    models = await sdk().models.list()
    assert {model.id for model in models.data} == {"demo", "upstream"}
    found = await sdk().models.retrieve("demo")
    assert found.id == "demo" and found.owned_by == "orkestrel"
    with pytest.raises(openai.NotFoundError):
        await sdk().models.retrieve("nope")


async def test_a_completion_answers_with_the_demo_profile_and_records_the_run(sdk, demo, alice):
    completion = await sdk().chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "hello there"}]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant" and choice.message.content
    assert completion.usage is not None and completion.usage.total_tokens > 0

    @sync_to_async
    def stored():
        conversation = Conversation.objects.get(owner=alice)
        run = Run.objects.get(conversation=conversation)
        roles = list(
            Message.objects.filter(conversation=conversation)
            .order_by("position")
            .values_list("role", "content")
        )
        return conversation, run, roles

    conversation, run, roles = await stored()
    assert conversation.origin == "openai" and conversation.title == "hello there"
    assert run.status == "done" and run.request["api"] == "chat.completions"
    assert roles == [("user", "hello there"), ("assistant", choice.message.content)]


async def test_a_stream_sends_chunks_then_finish_then_usage(sdk, demo):
    stream = await sdk().chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and finishes.count("stop") == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0


async def test_the_profile_runs_its_own_tool_and_answers_with_its_result(sdk, demo, alice):
    completion = await sdk().chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "what files are in my workspace?"}]
    )
    message = completion.choices[0].message
    assert "The workspace tool answered" in message.content
    assert message.tool_calls is None and completion.choices[0].finish_reason == "stop"
    roles = await sync_to_async(
        lambda: list(
            Message.objects.filter(conversation__owner=alice)
            .order_by("position")
            .values_list("role", flat=True)
        )
    )()
    assert roles == ["user", "assistant", "tool", "assistant"]


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


async def test_a_client_tool_call_ends_the_run_and_its_result_continues(sdk, upstream, stub):
    stub.enqueue(reply("openai", calls=[("call_1", "get_weather", {"city": "Paris"})]))
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    first = await sdk().chat.completions.create(model="upstream", messages=asked, tools=[WEATHER])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.id == "call_1" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    # The model saw the client's tool beside the profile's (none here).
    assert [t["function"]["name"] for t in stub.requests[0].json()["tools"]] == ["get_weather"]

    stub.enqueue(reply("openai", ["It is ", "sunny."]))
    follow = [
        *asked,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "sunny"}'},
    ]
    second = await sdk().chat.completions.create(model="upstream", messages=follow, tools=[WEATHER])
    assert second.choices[0].message.content == "It is sunny."
    sent = stub.requests[1].json()["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "sunny"}'}
    assert sent[-2]["tool_calls"][0]["id"] == "call_1"


async def test_a_client_tool_named_like_a_profile_tool_is_a_bad_request(sdk, demo):
    clash = {**WEATHER, "function": {**WEATHER["function"], "name": "workspace"}}
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "hi"}], tools=[clash]
        )
    assert caught.value.body["param"] == "tools"
    assert not await sync_to_async(Conversation.objects.exists)()


async def test_sampling_and_the_schema_reach_the_upstream_model(sdk, upstream, stub):
    stub.enqueue(reply("openai", ['{"answer": 42}']))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    completion = await sdk().chat.completions.create(
        model="upstream",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "?"}],
        temperature=0.3,
        top_p=0.9,
        seed=7,
        stop=["END"],
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
    )
    assert json.loads(completion.choices[0].message.content) == {"answer": 42}
    sent = stub.requests[0].json()
    assert (sent["temperature"], sent["top_p"], sent["seed"], sent["stop"]) == (
        0.3,
        0.9,
        7,
        ["END"],
    )
    assert (sent["presence_penalty"], sent["frequency_penalty"]) == (0.5, -0.5)
    assert sent["response_format"]["json_schema"]["schema"] == schema
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][-2] == {"role": "system", "content": "Be brief."}


async def test_an_upstream_failure_is_a_502_without_its_body(sdk, upstream, stub):
    secret = Reply([b'{"error": "secret upstream detail"}'], status=500, content_type="x/json")
    stub.enqueue(secret)
    with pytest.raises(openai.InternalServerError) as caught:
        await sdk().chat.completions.create(
            model="upstream", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 502
    assert "secret" not in caught.value.response.text


async def test_errors_raise_the_sdk_exception_classes(sdk, demo):
    with pytest.raises(openai.AuthenticationError):
        await sdk("ork_wrong_key").models.list()
    with pytest.raises(openai.NotFoundError):
        await sdk().chat.completions.create(
            model="missing", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "hi"}], temperature="hot"
        )
    assert caught.value.body["param"] == "temperature"
    assert not await sync_to_async(Conversation.objects.exists)()


async def test_a_stream_carries_reasoning_and_client_tool_call_deltas(sdk, upstream, stub):
    stub.enqueue(
        reply(
            "openai",
            ["<think>weighing it</think>Checking."],
            calls=[("call_7", "get_weather", {"city": "Rome"})],
        )
    )
    stream = await sdk().chat.completions.create(
        model="upstream",
        messages=[{"role": "user", "content": "Rome?"}],
        tools=[WEATHER],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    reasoning = "".join(getattr(delta, "reasoning_content", None) or "" for delta in deltas)
    assert reasoning == "weighing it"
    assert "".join(delta.content or "" for delta in deltas) == "Checking."
    calls = [call for delta in deltas for call in delta.tool_calls or ()]
    assert [(c.index, c.id, c.function.name) for c in calls] == [(0, "call_7", "get_weather")]
    assert json.loads(calls[0].function.arguments) == {"city": "Rome"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_max_tokens_cuts_the_answer_with_finish_reason_length(sdk, upstream, stub, alice):
    stub.enqueue(reply("openai", ["word " * 8] * 10))
    completion = await sdk().chat.completions.create(
        model="upstream", messages=[{"role": "user", "content": "talk"}], max_tokens=5
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    assert 0 < len(choice.message.content) < len("word " * 80)
    run = await sync_to_async(Run.objects.get)(conversation__owner=alice)
    assert run.request["max_tokens"] == 5 and run.stop_reason == "abort"


async def test_reasoning_effort_user_and_metadata_are_honoured_and_recorded(
    sdk, upstream, stub, alice
):
    stub.enqueue(reply("openai", ["ok"]))
    await sdk().chat.completions.create(
        model="upstream",
        messages=[{"role": "user", "content": "think hard"}],
        reasoning_effort="high",
        user="end-user-7",
        metadata={"ticket": "T-1"},
        extra_body={"an_unknown_field": {"is": "ignored"}},
    )
    assert stub.requests[0].json()["reasoning_effort"] == "high"
    run = await sync_to_async(Run.objects.get)(conversation__owner=alice)
    assert run.request["user"] == "end-user-7" and run.request["metadata"] == {"ticket": "T-1"}


async def test_the_key_budget_is_shared_and_throttled_with_retry_after(sdk, demo, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api_key": "2/min"},
    }
    client = sdk()
    await client.models.list()
    await client.models.list()
    with pytest.raises(openai.RateLimitError) as caught:
        await client.models.list()
    assert int(caught.value.response.headers["Retry-After"]) >= 1
    assert caught.value.body["code"] == "rate_limit_exceeded"


async def test_a_client_that_leaves_mid_stream_cancels_nothing(alice_key, upstream, stub, alice):
    parts = [f"part{index} " for index in range(6)]
    stub.enqueue(reply("openai", parts, pause=0.05))
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.post(
        "/v1/chat/completions",
        {"model": "upstream", "stream": True, "messages": [{"role": "user", "content": "go"}]},
        content_type="application/json",
    )
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    chunks = aiter(response.streaming_content)
    first = await anext(chunks)
    assert b"chat.completion.chunk" in first
    await chunks.aclose()  # the client went away
    run = await sync_to_async(Run.objects.get)(conversation__owner=alice)
    await run_service.wait(run.pk)
    await sync_to_async(run.refresh_from_db)()
    assert run.status == "done" and run.content == "".join(parts)
    answer = await sync_to_async(
        lambda: Message.objects.filter(conversation__owner=alice, role="assistant").get().content
    )()
    assert answer == "".join(parts)


async def test_wrong_methods_bodies_and_keys_answer_in_openai_error_shape(alice_key, demo):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    wrong = await client.get("/v1/chat/completions")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
    broken = await client.post("/v1/chat/completions", "{", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_json"
    empty = await client.post(
        "/v1/chat/completions", {"model": "demo", "messages": []}, content_type="application/json"
    )
    assert empty.status_code == 400 and empty.json()["error"]["param"] == "messages"
    anonymous = await AsyncClient().get("/v1/models")
    assert anonymous.status_code == 401
    assert set(anonymous.json()["error"]) == {"message", "type", "param", "code"}


async def test_a_client_tool_passes_the_profile_scope_and_a_deny_all_policy(
    sdk, upstream, stub, alice
):
    @sync_to_async
    def lock_down() -> None:
        upstream.scope = Scope.objects.create(name="nothing", tools=[])
        upstream.authority_policy = AuthorityPolicy.objects.create(
            name="deny", fallback_allowed=False, fallback_reason="not here"
        )
        upstream.save()

    await lock_down()
    stub.enqueue(reply("openai", calls=[("call_2", "get_weather", {"city": "Lima"})]))
    completion = await sdk().chat.completions.create(
        model="upstream", messages=[{"role": "user", "content": "Lima?"}], tools=[WEATHER]
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    assert [t["function"]["name"] for t in stub.requests[0].json()["tools"]] == ["get_weather"]


async def test_a_model_failing_mid_stream_raises_in_the_sdk_not_a_broken_stream(
    sdk, upstream, stub
):
    stub.enqueue(reply("openai", ["half ", "an ", "answer"], end=False, drop_after=2))
    stream = await sdk().chat.completions.create(
        model="upstream", messages=[{"role": "user", "content": "go"}], stream=True
    )
    seen: list[str] = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            seen += [c.delta.content or "" for c in chunk.choices]
    assert "model server failed" in str(caught.value)
    assert "".join(seen).startswith("half")
