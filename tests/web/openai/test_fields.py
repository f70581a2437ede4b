"""The ``/v1`` bodies' text and nesting (issue 30, item 5): a NUL or a lone surrogate anywhere
in a body (the model, metadata, a message, a response id) is a 400 naming it, in OpenAI's
shape, never a query PostgreSQL refuses; JSON nested too deep is a 400 too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from conversations.models import Conversation
from orkestrel.asgi import application
from orkestrel.storable import MAX_DEPTH

pytestmark = pytest.mark.django_db(transaction=True)

NUL = "a NUL character"
SURROGATE = "an unpaired surrogate"


@pytest.fixture
async def post(alice_key: str) -> AsyncIterator[Callable[..., Any]]:
    """``post(path, body)``: the app's answer to a JSON body (a string is sent as it is)."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {alice_key}", "Content-Type": "application/json"},
    ) as http:

        async def send(path: str, body: object) -> httpx.Response:
            # ``json.dumps`` escapes a lone surrogate (``\\ud800``) as a client's JSON would.
            return await http.post(
                path, content=body if isinstance(body, str) else json.dumps(body)
            )

        yield send


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": "demo", "messages": [{"role": "user", "content": "hi"}], **fields}


def respond(**fields: Any) -> dict[str, Any]:
    return {"model": "demo", "input": "hi", **fields}


CASES = [
    ("/v1/chat/completions", chat(model="de\x00mo"), "model", NUL),
    ("/v1/chat/completions", chat(model="de\ud83dmo"), "model", SURROGATE),
    ("/v1/chat/completions", chat(metadata={"k": "v\x00"}), "metadata.k", NUL),
    ("/v1/chat/completions", chat(user="u\x00"), "user", NUL),
    (
        "/v1/chat/completions",
        chat(messages=[{"role": "user", "content": "a\x00b"}]),
        "messages[0].content",
        NUL,
    ),
    ("/v1/responses", respond(model="de\x00mo"), "model", NUL),
    ("/v1/responses", respond(previous_response_id="resp_\x00"), "previous_response_id", NUL),
    ("/v1/responses", respond(metadata={"k": "\ud800"}), "metadata.k", SURROGATE),
    ("/v1/responses", respond(input="a\x00b"), "input", NUL),
]


@pytest.mark.parametrize(("path", "body", "param", "problem"), CASES)
async def test_unstorable_text_in_a_v1_body_is_a_400_naming_it(
    post, demo, path: str, body: dict[str, Any], param: str, problem: str
):
    response = await post(path, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "message": f"'{param}' holds {problem}.",
        "type": "invalid_request_error",
        "param": param,
        "code": "invalid_text",
    }
    assert not await Conversation.objects.aexists()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
@pytest.mark.parametrize("depth", [100_000, MAX_DEPTH + 1])
async def test_json_nested_too_deep_is_a_400_in_openais_shape(post, demo, path: str, depth: int):
    deep = "[" * depth + "]" * depth
    response = await post(path, '{"model": "demo", "metadata": ' + deep + "}")
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_json")
