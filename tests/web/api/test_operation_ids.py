"""The schema's operations are named as verbs (``cancelRun``, ``listConversations``), once
each, and every answer declares what it carries: ``X-Request-ID``, and the ``RateLimit-*``
headers on successes and 429s."""

from __future__ import annotations

import re
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from agents.api.schema import operation_id

METHODS = ("get", "post", "put", "patch", "delete")
VERBS = (
    "list|get|create|update|put|delete|cancel|retry|stream|decide|send|edit|regenerate|fork"
    "|compact|export|import|search|choose|take|upload|replace|answer"
)
NAME = re.compile(rf"(?:{VERBS})[A-Z][A-Za-z]*")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", item[method])
        for path, item in schema["paths"].items()
        for method in METHODS
        if method in item
    ]


def test_every_operation_id_is_a_verb_then_its_resource_and_unique(schema):
    ids = {name: operation["operationId"] for name, operation in operations(schema)}
    wrong = {name: found for name, found in ids.items() if not NAME.fullmatch(found)}
    assert not wrong
    assert len(set(ids.values())) == len(ids)
    assert ids["GET /api/conversations/"] == "listConversations"
    assert ids["POST /api/runs/{id}/cancel/"] == "cancelRun"
    assert ids["GET /api/runs/{id}/"] == "getRun"
    assert ids["POST /api/conversations/{id}/messages/"] == "sendMessage"
    assert ids["GET /api/conversations/{conversation_id}/workspace/files/{path}"] == (
        "getWorkspaceFile"
    )


@pytest.mark.parametrize(
    ("path", "method", "action", "expected"),
    [
        ("/api/runs/", "GET", "list", "listRuns"),
        ("/api/conversations/{id}/events/", "GET", "events", "streamConversationEvents"),
        ("/api/approvals/{id}/decide/", "POST", "decide", "decideApproval"),
        ("/api/usage/", "GET", None, "getUsage"),
        ("/api/keys/{id}/", "DELETE", "destroy", "deleteKey"),
    ],
)
def test_an_operation_is_named_from_its_path_and_action(path, method, action, expected):
    assert operation_id(path, method, action) == expected


def test_every_answer_declares_its_request_id_and_successes_their_budget(schema):
    missing = []
    for name, operation in operations(schema):
        for status, response in operation["responses"].items():
            headers = response.get("headers", {})
            if "X-Request-ID" not in headers:
                missing.append(f"{name} {status}: X-Request-ID")
            budget = status.startswith("2") or status == "429"
            if budget and "RateLimit-Remaining" not in headers:
                missing.append(f"{name} {status}: RateLimit-Remaining")
    assert not missing
