"""``/v1/models`` and ``/v1/chat/completions`` through the official ``openai`` SDK, against the
served app: the offline ``demo`` profile and ``upstream-agent`` (a profile on the fake upstream,
``tests/e2e/upstream.py``, whose requests the tests read back)."""

from __future__ import annotations

import json
import urllib.request

import jsonschema
import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)

from .conftest import Server
from .openai_setup import (
    DEMO,
    DEMO_TAIL,
    DEMO_THINKING,
    TIMEOUT,
    UPSTREAM_PROFILE,
    UPSTREAM_PROMPT,
    WEATHER_FUNCTION,
    WEATHER_RESULT,
    WORKSPACE_ANSWER,
    error_body,
    finish_reasons,
    joined_content,
    marker,
    recorded,
)
from .upstream import (
    ECHO,
    FAIL_TRIGGER,
    SECRET_DETAIL,
    TOOL_ANSWER,
    WEATHER_ARGUMENTS,
    WEATHER_TOOL,
    FakeUpstream,
    message_texts,
)

pytestmark = pytest.mark.e2e


def test_the_models_list_names_each_usable_profile_by_its_slug(client: openai.OpenAI) -> None:
    models = list(client.models.list())
    ids = [model.id for model in models]
    assert DEMO in ids
    assert UPSTREAM_PROFILE in ids
    assert len(ids) == len(set(ids))
    assert {model.object for model in models} == {"model"}


def test_a_model_is_retrieved_by_slug_and_an_unknown_one_is_not_found(
    client: openai.OpenAI,
) -> None:
    model = client.models.retrieve(DEMO)
    assert (model.id, model.object) == (DEMO, "model")
    with pytest.raises(openai.NotFoundError) as raised:
        client.models.retrieve("no-such-profile")
    assert raised.value.status_code == 404
    error_body(raised.value)


# --- chat completions on the demo profile ------------------------------------------------------


def test_a_chat_completion_answers_with_an_assistant_message_a_stop_and_usage(
    client: openai.OpenAI,
) -> None:
    said = f"Hello there {marker()}"
    completion = client.chat.completions.create(
        model=DEMO, messages=[{"role": "user", "content": said}]
    )
    assert completion.object == "chat.completion"
    assert completion.model == DEMO
    assert completion.id
    [choice] = completion.choices
    assert choice.message.role == "assistant"
    assert choice.message.content is not None
    assert choice.message.content.startswith(f"You said: {said}")
    assert DEMO_THINKING not in choice.message.content
    assert not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_a_streamed_chat_completion_sends_deltas_that_join_into_the_answer(
    client: openai.OpenAI,
) -> None:
    said = f"Stream to me {marker()}"
    with client.chat.completions.create(
        model=DEMO, messages=[{"role": "user", "content": said}], stream=True
    ) as stream:
        chunks = list(stream)
    assert chunks
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk.id for chunk in chunks}) == 1  # every chunk of one completion shares it
    answer = joined_content(chunks)
    assert answer.startswith(f"You said: {said}")
    assert answer.endswith(DEMO_TAIL)
    assert len([chunk for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]) > 1
    assert finish_reasons(chunks) == ["stop"]
    assert chunks[-1].choices[0].finish_reason == "stop"
    # No usage unless asked for (``stream_options.include_usage``).
    assert all(chunk.usage is None for chunk in chunks)
    assert all(chunk.choices for chunk in chunks)


def test_reasoning_streams_as_reasoning_content_apart_from_the_content(
    client: openai.OpenAI,
) -> None:
    with client.chat.completions.create(
        model=DEMO, messages=[{"role": "user", "content": f"Think {marker()}"}], stream=True
    ) as stream:
        chunks = list(stream)
    reasoning = "".join(
        (choice.delta.model_extra or {}).get("reasoning_content") or ""
        for chunk in chunks
        for choice in chunk.choices
    )
    assert reasoning == DEMO_THINKING
    assert DEMO_THINKING not in joined_content(chunks)


def test_include_usage_adds_a_last_chunk_with_usage_and_no_choices(
    client: openai.OpenAI,
) -> None:
    with client.chat.completions.create(
        model=DEMO,
        messages=[{"role": "user", "content": f"Count me {marker()}"}],
        stream=True,
        stream_options={"include_usage": True},
    ) as stream:
        chunks = list(stream)
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert last.usage.prompt_tokens > 0 and last.usage.completion_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert all(chunk.usage is None for chunk in chunks[:-1])
    assert finish_reasons(chunks) == ["stop"]
    assert joined_content(chunks).endswith(DEMO_TAIL)


def test_max_tokens_is_the_run_budget_and_running_out_ends_with_length(
    client: openai.OpenAI,
) -> None:
    completion = client.chat.completions.create(
        model=DEMO,
        messages=[{"role": "user", "content": f"Which files do I have? {marker()}"}],
        max_tokens=1,
    )
    [choice] = completion.choices
    assert choice.finish_reason == "length"
    assert choice.message.role == "assistant"
    assert not choice.message.tool_calls


# --- server-side tools --------------------------------------------------------------------------


def test_a_profile_tool_runs_on_the_server_and_the_run_is_recorded(
    client: openai.OpenAI, server: Server, keys: dict[str, str]
) -> None:
    probe = marker()
    completion = client.chat.completions.create(
        model=DEMO,
        messages=[{"role": "user", "content": f"Which files do I have? {probe}"}],
    )
    [choice] = completion.choices
    assert choice.finish_reason == "stop"
    assert not choice.message.tool_calls  # the server ran it: nothing for the client to do
    assert choice.message.content is not None
    assert WORKSPACE_ANSWER in choice.message.content

    record = recorded(server, probe)
    assert (record["origin"], record["owner"]) == ("openai", "alice")
    assert record["runs"] and {run["status"] for run in record["runs"]} == {"done"}
    assert sum(run["usage_total"] for run in record["runs"]) > 0
    roles = [message["role"] for message in record["messages"]]
    assert roles[0] == "user"
    assert "tool" in roles
    called = [call["name"] for message in record["messages"] for call in message["calls"] or []]
    assert called == ["workspace"]
    tool_message = next(m for m in record["messages"] if m["role"] == "tool")
    assert tool_message["content"]
    assert record["messages"][-1]["role"] == "assistant"
    assert WORKSPACE_ANSWER in record["messages"][-1]["content"]

    # The REST API shows the same conversation to its owner, with its origin.
    request = urllib.request.Request(
        f"{server.url}/api/conversations/{record['id']}/",
        headers={"Authorization": f"Bearer {keys['alice']}", "Accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        body = json.loads(response.read())
    assert body["id"] == record["id"]
    assert body["origin"] == "openai"


def test_a_streamed_answer_keeps_server_tool_activity_out_of_the_stream(
    client: openai.OpenAI,
) -> None:
    with client.chat.completions.create(
        model=DEMO,
        messages=[{"role": "user", "content": f"List my files please {marker()}"}],
        stream=True,
    ) as stream:
        chunks = list(stream)
    assert not any(choice.delta.tool_calls for chunk in chunks for choice in chunk.choices)
    answer = joined_content(chunks)
    assert WORKSPACE_ANSWER in answer
    assert '"operation"' not in answer  # the call's arguments are not text for the client
    assert finish_reasons(chunks) == ["stop"]


def test_a_client_tool_named_like_a_profile_tool_is_a_bad_request(
    client: openai.OpenAI,
) -> None:
    clash: ChatCompletionFunctionToolParam = {
        "type": "function",
        "function": {"name": "workspace", "parameters": {}},
    }
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model=DEMO,
            messages=[{"role": "user", "content": f"Hello {marker()}"}],
            tools=[clash],
        )
    assert raised.value.status_code == 400
    assert "workspace" in error_body(raised.value)["message"]


# --- client tools, schemas and request fields on the fake upstream ------------------------------


def test_a_client_tool_call_stops_the_run_and_its_result_continues_it(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    probe = marker()
    question: ChatCompletionMessageParam = {
        "role": "user",
        "content": f"What is the weather in Paris? {probe}",
    }
    first = client.chat.completions.create(
        model=UPSTREAM_PROFILE, messages=[question], tools=[WEATHER_FUNCTION]
    )
    [choice] = first.choices
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 1
    call = calls[0]
    assert call.type == "function"
    assert call.id
    assert call.function.name == WEATHER_TOOL
    assert json.loads(call.function.arguments) == WEATHER_ARGUMENTS
    # The client's tool was offered beside the profile's, and the run stopped at its call.
    [asked] = upstream.requests_mentioning(probe)
    offered = {tool["function"]["name"] for tool in asked["tools"]}
    assert {WEATHER_TOOL, "workspace"} <= offered

    second = client.chat.completions.create(
        model=UPSTREAM_PROFILE,
        messages=[
            question,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": WEATHER_TOOL, "arguments": call.function.arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": WEATHER_RESULT},
        ],
        tools=[WEATHER_FUNCTION],
    )
    [answer] = second.choices
    assert answer.finish_reason == "stop"
    assert not answer.message.tool_calls
    assert answer.message.content == TOOL_ANSWER + WEATHER_RESULT
    sent = upstream.requests_mentioning(probe)[-1]["messages"]
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["content"] == WEATHER_RESULT
    assert sent[-2]["role"] == "assistant"
    assert [c["function"]["name"] for c in sent[-2]["tool_calls"]] == [WEATHER_TOOL]
    assert sent[-2]["tool_calls"][0]["id"] == sent[-1]["tool_call_id"]


def test_a_streamed_client_tool_call_arrives_as_tool_call_deltas(
    client: openai.OpenAI,
) -> None:
    with client.chat.completions.create(
        model=UPSTREAM_PROFILE,
        messages=[{"role": "user", "content": f"Weather in Paris? {marker()}"}],
        tools=[WEATHER_FUNCTION],
        stream=True,
    ) as stream:
        chunks = list(stream)
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or (delta.id or "")
                if delta.function is not None:
                    call["name"] += delta.function.name or ""
                    call["arguments"] += delta.function.arguments or ""
    assert list(calls) == [0]
    assert calls[0]["id"]
    assert calls[0]["name"] == WEATHER_TOOL
    assert json.loads(calls[0]["arguments"]) == WEATHER_ARGUMENTS
    assert finish_reasons(chunks) == ["tool_calls"]
    assert joined_content(chunks) == ""


def test_a_json_schema_response_format_makes_the_content_match_the_schema(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperature_c": {"type": "integer"},
            "sunny": {"type": "boolean"},
        },
        "required": ["city", "temperature_c", "sunny"],
        "additionalProperties": False,
    }
    probe = marker()
    completion = client.chat.completions.create(
        model=UPSTREAM_PROFILE,
        messages=[{"role": "user", "content": f"Report the weather as JSON {probe}"}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "weather_report", "schema": schema, "strict": True},
        },
    )
    content = completion.choices[0].message.content
    assert content is not None
    jsonschema.validate(json.loads(content), schema)
    [asked] = upstream.requests_mentioning(probe)
    assert asked["response_format"]["type"] == "json_schema"
    assert asked["response_format"]["json_schema"]["schema"]["properties"] == schema["properties"]


def test_the_profiles_system_prompt_comes_before_the_requests_system_message(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    probe = marker()
    client.chat.completions.create(
        model=UPSTREAM_PROFILE,
        messages=[
            {"role": "system", "content": f"Answer in one line. {probe}"},
            {"role": "user", "content": "How is it outside?"},
        ],
    )
    [asked] = upstream.requests_mentioning(probe)
    messages = asked["messages"]
    assert messages[-1] == {"role": "user", "content": "How is it outside?"}
    system = "\n".join(message_texts(messages[:-1], "system", "developer"))
    assert UPSTREAM_PROMPT in system
    assert f"Answer in one line. {probe}" in system
    assert system.index(UPSTREAM_PROMPT) < system.index(probe)


def test_sampling_fields_and_reasoning_effort_reach_the_upstream_and_unknown_fields_do_not_fail(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    probe = marker()
    with client.chat.completions.create(
        model=UPSTREAM_PROFILE,
        messages=[{"role": "user", "content": f"Sample me {probe}"}],
        temperature=0.25,
        top_p=0.5,
        seed=7,
        stop=["END"],
        presence_penalty=0.5,
        frequency_penalty=0.25,
        reasoning_effort="low",
        user="e2e-user",
        metadata={"suite": "e2e"},
        stream=True,
        extra_body={"frobnicate": True},  # unknown: ignored, as the issue asks
    ) as stream:
        chunks = list(stream)
    assert joined_content(chunks) == f"{ECHO}Sample me {probe}"
    reasoning = "".join(
        (choice.delta.model_extra or {}).get("reasoning_content") or ""
        for chunk in chunks
        for choice in chunk.choices
    )
    assert reasoning == "Reasoning at low effort."
    [asked] = upstream.requests_mentioning(probe)
    assert asked["reasoning_effort"] == "low"
    sent = {name: asked.get(name) for name in ("temperature", "top_p", "seed", "stop")}
    assert sent == {"temperature": 0.25, "top_p": 0.5, "seed": 7, "stop": ["END"]}
    assert (asked.get("presence_penalty"), asked.get("frequency_penalty")) == (0.5, 0.25)
    assert "frobnicate" not in asked


def test_an_upstream_failure_is_a_502_that_hides_the_upstreams_body(
    client: openai.OpenAI,
) -> None:
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(
            model=UPSTREAM_PROFILE,
            messages=[{"role": "user", "content": f"{FAIL_TRIGGER} {marker()}"}],
        )
    assert raised.value.status_code == 502
    error_body(raised.value)
    assert SECRET_DETAIL not in raised.value.response.text
    assert "Traceback" not in raised.value.response.text
