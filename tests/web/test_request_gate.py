"""The HTTP door's gate (issue 30, item 5): a body over the limit is refused before it is
read, by its ``Content-Length`` or, chunked, as it arrives; a URL holding a NUL is a 400, not
a query PostgreSQL refuses (a 500 there)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import ApiKey
from conversations.models import Conversation
from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

TEN_GIB = 10 * 2**30
# Long enough for any answer here; a request that waits for its body never gets one.
ANSWER_SECONDS = 10


async def _call(scope: dict[str, Any], receive: Callable[[], Any]) -> tuple[int, Any]:
    """``application``'s status and JSON body for one raw ASGI request."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(application(scope, receive, send), ANSWER_SECONDS)
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent[1:])
    return start["status"], json.loads(body)


def _scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


def _refusal(answer: dict[str, Any]) -> tuple[str, str]:
    """An error's message and code, from the API's shape or OpenAI's."""
    error = answer.get("error", answer)
    return error.get("message", error.get("detail")), error["code"]


@pytest.mark.parametrize(
    ("path", "code"),
    [("/api/conversations/", "too_large"), ("/v1/chat/completions", "request_too_large")],
)
async def test_a_declared_body_over_the_limit_is_refused_before_a_byte_is_read(
    settings, path: str, code: str
):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_REQUEST_BYTES": 1000}
    asked = asyncio.Event()

    async def receive() -> dict[str, Any]:
        # The client is still sending its 10 GiB: nothing arrives while the test runs.
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    scope = _scope(path, [(b"content-length", str(TEN_GIB).encode())])
    status, answer = await _call(scope, receive)
    assert status == 413
    assert _refusal(answer) == ("The request body is larger than 1000 bytes.", code)
    assert not asked.is_set()


async def test_a_chunked_body_is_counted_as_it_arrives_and_refused_past_the_limit(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_REQUEST_BYTES": 5000}
    chunks = 0

    async def receive() -> dict[str, Any]:
        nonlocal chunks
        chunks += 1
        # 1000 bytes at a time, for ever (no Content-Length: chunked).
        return {"type": "http.request", "body": b" " * 1000, "more_body": chunks < 1000}

    status, answer = await _call(_scope("/api/conversations/", []), receive)
    assert (status, answer["code"]) == (413, "too_large")
    assert chunks == 6  # the chunk that passed the limit is the last one read


@pytest.fixture
def http(alice) -> Callable[[], httpx.AsyncClient]:
    key = ApiKey.objects.issue(user=alice, name="gate")[1]

    def make() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application),
            base_url="http://testserver",
            headers={"Authorization": f"Bearer {key}"},
        )

    return make


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-pass-123")


@pytest.mark.parametrize(
    "where",
    [
        "/api/conversations/search/?q=a%00b",
        "/api/conversations/{conversation}/workspace/files/notes%00.md",
        "/api/conversations/{conversation}/workspace/files/notes.md?start_line=%00",
        "/api/conversations/?cursor=%00",
    ],
)
async def test_a_nul_in_an_api_url_is_a_400_in_the_apis_shape(http, alice, where: str):
    conversation = await Conversation.objects.acreate(owner=alice, title="t")
    async with http() as client:
        response = await client.get(where.format(conversation=conversation.pk))
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_text"
    assert "NUL" in response.json()["detail"]


@pytest.mark.parametrize("where", ["/v1/models/de%00mo", "/v1/responses/resp_%00"])
async def test_a_nul_in_a_v1_url_is_a_400_in_openais_shape(http, where: str):
    await asyncio.to_thread(ensure_demo_profile)
    async with http() as client:
        response = await client.get(where)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_text")


async def test_a_url_without_a_nul_goes_through(http):
    async with http() as client:
        response = await client.get(f"/api/conversations/{uuid.uuid4()}/workspace/files/a%20b")
    assert response.status_code == 404
