"""The ``/v1`` errors as the SDK's exception classes, throttling, a client leaving mid-stream,
and a second real client (LangChain's ``ChatOpenAI``) completing turns."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from pydantic import SecretStr

from .conftest import Server
from .openai_setup import (
    DEMO,
    DEMO_TAIL,
    THROTTLE_ATTEMPTS,
    TIMEOUT,
    UPSTREAM_PROFILE,
    WEATHER_FUNCTION,
    WEATHER_RESULT,
    error_body,
    marker,
    recorded,
    sdk,
)
from .upstream import (
    ECHO,
    TOOL_ANSWER,
    WEATHER_ARGUMENTS,
    WEATHER_TOOL,
)

pytestmark = pytest.mark.e2e

# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["sk-not-an-orkestrel-key", "ork_abcdefgh_" + "x" * 43])
def test_a_bad_key_is_an_authentication_error(server: Server, key: str) -> None:
    with sdk(server, key) as stranger:
        with pytest.raises(openai.AuthenticationError) as raised:
            stranger.models.list()
        error_body(raised.value)
        with pytest.raises(openai.AuthenticationError):
            stranger.chat.completions.create(
                model=DEMO, messages=[{"role": "user", "content": "hi"}]
            )


def test_an_unknown_model_is_not_found(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(
            model="no-such-profile", messages=[{"role": "user", "content": "hi"}]
        )
    error_body(raised.value)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="no-such-profile", input="hi")


@pytest.mark.parametrize(
    "fields",
    [
        {"messages": "x"},
        {"messages": [{"role": "user", "content": 5}]},
        {"temperature": "hot"},
        {"max_tokens": "many"},
        {"tools": "get_weather"},
        {"stream": "yes"},
    ],
    ids=["messages-string", "content-number", "temperature", "max-tokens", "tools", "stream"],
)
def test_a_chat_field_of_the_wrong_type_is_a_bad_request(
    client: openai.OpenAI, fields: dict[str, Any]
) -> None:
    request: dict[str, Any] = {"model": DEMO, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(openai.BadRequestError) as raised:
        # ``extra_body`` puts the wrong value on the wire as is, past the SDK's typing.
        client.chat.completions.create(**request, extra_body=fields)
    error_body(raised.value)


@pytest.mark.parametrize("fields", [{"input": 5}, {"store": "maybe"}], ids=["input", "store"])
def test_a_response_field_of_the_wrong_type_is_a_bad_request(
    client: openai.OpenAI, fields: dict[str, Any]
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model=DEMO, input="hi", extra_body=fields)
    error_body(raised.value)


def test_too_many_requests_is_a_rate_limit_error_with_retry_after(
    server: Server, keys: dict[str, str], client: openai.OpenAI
) -> None:
    # A key of its own: its budget is spent here and nowhere else.
    served = 0
    with sdk(server, keys["throttled"]) as hasty:
        for _ in range(THROTTLE_ATTEMPTS):
            try:
                hasty.models.list()
            except openai.RateLimitError as error:
                refused = error
                break
            served += 1
        else:
            pytest.fail(f"no 429 after {THROTTLE_ATTEMPTS} requests in a row")
    assert served > 0  # the key worked until its budget ran out
    assert refused.status_code == 429
    assert int(refused.response.headers["retry-after"]) > 0
    error_body(refused)
    assert DEMO in [model.id for model in client.models.list()]  # other keys are unaffected


# --- a client that leaves --------------------------------------------------------------------


def test_a_client_leaving_mid_stream_cancels_nothing(client: openai.OpenAI, server: Server) -> None:
    probe = marker()
    said = f"Leave early {probe}"
    stream = client.chat.completions.create(
        model=DEMO, messages=[{"role": "user", "content": said}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    stream.close()  # gone after the first words

    record = recorded(server, probe)
    assert [run["status"] for run in record["runs"]] == ["done"]
    answer = record["messages"][-1]
    assert answer["role"] == "assistant"
    assert answer["content"].startswith(f"You said: {said}")
    assert answer["content"].endswith(DEMO_TAIL)


# --- a second real client: LangChain -------------------------------------------------------------


def langchain_model(server: Server, key: str, model: str, **options: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        base_url=f"{server.url}/v1",
        api_key=SecretStr(key),
        max_retries=0,
        timeout=TIMEOUT,
        **options,
    )


def test_langchain_chat_openai_completes_a_turn(server: Server, keys: dict[str, str]) -> None:
    said = f"Hello from LangChain {marker()}"
    reply = langchain_model(server, keys["alice"], DEMO).invoke(said)
    assert isinstance(reply.content, str)
    assert reply.content.startswith(f"You said: {said}")
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.usage_metadata is not None and reply.usage_metadata["total_tokens"] > 0


def test_langchain_bound_tools_make_a_round_trip(server: Server, keys: dict[str, str]) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    model = langchain_model(server, keys["alice"], UPSTREAM_PROFILE).bind_tools([WEATHER_FUNCTION])
    question = HumanMessage(f"Weather in Paris? {marker()}")
    called = model.invoke([question])
    assert [(call["name"], call["args"]) for call in called.tool_calls] == [
        (WEATHER_TOOL, WEATHER_ARGUMENTS)
    ]
    result = ToolMessage(WEATHER_RESULT, tool_call_id=called.tool_calls[0]["id"])
    answer = model.invoke([question, called, result])
    assert answer.content == TOOL_ANSWER + WEATHER_RESULT


def test_langchain_over_the_responses_api_completes_a_turn(
    server: Server, keys: dict[str, str]
) -> None:
    said = f"Hello over responses {marker()}"
    model = langchain_model(server, keys["alice"], UPSTREAM_PROFILE, use_responses_api=True)
    reply = model.invoke(said)
    assert reply.text == f"{ECHO}{said}"
