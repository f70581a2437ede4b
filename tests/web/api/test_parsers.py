"""The API's JSON parser (issue 30, item 5): JSON nested too deep is a 400 in the API's shape
on every operation that takes a body (it was an HTML 500), and text PostgreSQL cannot hold (a
NUL, a lone surrogate) is a 400 naming its field wherever it is in a body."""

from __future__ import annotations

import json

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation, Message
from orkestrel.storable import MAX_DEPTH
from tests.web.api.test_every_endpoint import operations

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
WRITES = ("post", "put", "patch")


@pytest.fixture
def mine(alice) -> Conversation:
    ensure_demo_profile()
    return Conversation.objects.create(owner=alice, title="t")


def _writes(api, conversation: Conversation) -> list[tuple[str, str]]:
    """Every operation that takes a body, on alice's conversation where it names one."""
    zero = "00000000-0000-0000-0000-000000000000"
    return [
        (method, url.replace(zero, str(conversation.pk)))
        for method, url in operations(api)
        if method in WRITES
    ]


@pytest.mark.parametrize(
    "body",
    [DEEP, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)],
    ids=["100000-deep", "past-MAX_DEPTH"],
)
def test_json_nested_too_deep_is_a_400_in_the_apis_shape_on_every_operation(api, mine, body):
    writes = _writes(api, mine)
    assert len(writes) > 10
    parsed = 0
    for method, url in writes:
        response = getattr(api, method)(url, body, content_type="application/json")
        assert response["Content-Type"] == "application/problem+json", (method, url)
        answer = response.json()
        if response.status_code == 400:
            parsed += 1
            assert answer["code"] == "parse_error", (method, url, answer)
            assert "nest" in answer["detail"], (method, url, answer)
        else:
            # A refusal before the body is read (no such object, read only...).
            assert response.status_code in (403, 404, 405, 409, 415), (method, url, answer)
    assert parsed > 10


def _json(body: object) -> dict[str, str]:
    # ``json.dumps`` escapes a lone surrogate as ``\\ud800``, as a client's JSON would.
    return {"data": json.dumps(body), "content_type": "application/json"}


@pytest.mark.parametrize(
    ("text", "problem"), [("a\x00b", "a NUL character"), ("a\ud800b", "an unpaired surrogate")]
)
def test_unstorable_text_anywhere_in_a_body_is_a_400_naming_its_field(api, mine, text, problem):
    response = api.post(f"/api/conversations/{mine.pk}/messages/", **_json({"content": text}))
    assert response.status_code == 400
    assert response.json()["errors"] == {"content": [f"'content' holds {problem}."]}
    response = api.patch(
        f"/api/conversations/{mine.pk}/", **_json({"title": "ok", "x": [{"y": text}]})
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"x": {"0": {"y": [f"'x[0].y' holds {problem}."]}}}
    assert not Message.objects.exists()
    assert Conversation.objects.get().title == "t"


def test_a_workspace_path_in_a_body_is_checked_at_the_api_door(api, mine):
    response = api.patch(
        f"/api/conversations/{mine.pk}/workspace/files/a.md",
        {"op": "move", "to": "b\x00.md"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"to": ["'to' holds a NUL character."]}


def test_a_body_of_storable_text_goes_through(api, mine):
    response = api.patch(f"/api/conversations/{mine.pk}/", {"title": "ünïcödé 🙂"}, format="json")
    assert response.status_code == 200
