"""The schema's examples: every operation of ``/api/`` has them, and each one is true to its schema.

Reads the schema the API serves (drf-spectacular's generator, as ``/api/schema/``) and checks,
per operation: an example for each request body and each answer with a body, the answers every
operation can give (401, 429; 400, 413, 415 with a body; 404 with a path parameter), and every
example against the schema beside it (jsonschema, the schema's ``$ref``s resolved). Event-stream
examples are parsed as SSE and each event's frame rebuilt with the protocol's own dataclass.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import jsonschema
import pytest
from django.test import AsyncClient
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from agents.api import examples
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import ApiKey
from agents.runs import run_service
from conversations.models import Conversation
from orkestrel.protocol import SERVER_FRAMES, encode

METHODS = ("get", "post", "put", "patch", "delete")
JSON = "application/json"
PROBLEM = "application/problem+json"
ERROR = {"$ref": "#/components/schemas/Error"}
# Refusals that may come from the HTTP server rather than the API, so without a body to promise:
# Daphne (Twisted) parses a multipart POST itself and answers a malformed one with a bare 400.
BARE = {("POST /api/conversations/{id}/attachments/", "400")}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("POST /api/...", operation)`` for every operation under ``/api/``."""
    for path, item in schema["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method in METHODS:
            if method in item:
                yield f"{method.upper()} {path}", item[method]


def examples_of(content: dict[str, Any]) -> dict[str, Any]:
    """A media type object's examples (``example`` counts as one)."""
    found = dict(content.get("examples", {}))
    if "example" in content:
        found["example"] = {"value": content["example"]}
    return found


def media(operation: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(where, media type, media type object)`` of the request body and every answer."""
    for media_type, content in operation.get("requestBody", {}).get("content", {}).items():
        yield "request", media_type, content
    for status, response in operation["responses"].items():
        for media_type, content in response.get("content", {}).items():
            yield status, media_type, content


# -- every operation has examples --------------------------------------------------------------


def test_every_operation_has_examples_of_its_requests_and_answers(schema):
    missing = []
    for name, operation in operations(schema):
        for where, media_type, content in media(operation):
            if content.get("schema", {}).get("format") == "binary":
                continue  # bytes: an example would only say so
            if not examples_of(content):
                missing.append(f"{name}: {where} {media_type}")
    assert not missing, "operations without examples:\n" + "\n".join(missing)


def test_every_operation_documents_the_refusals_it_can_give(schema):
    missing = []
    for name, operation in operations(schema):
        statuses = {"400", "401", "406", "429"}
        if "requestBody" in operation:
            statuses |= {"413", "415"}
        if any(p["in"] == "path" for p in operation.get("parameters", [])):
            statuses.add("404")
        responses = operation["responses"]
        missing += [f"{name}: {status}" for status in sorted(statuses - set(responses))]
        for status, response in responses.items():
            shape = response.get("content", {}).get(PROBLEM, {}).get("schema")
            if int(status) >= 400 and shape != ERROR and (name, status) not in BARE:
                missing.append(f"{name}: {status} is not in the one error shape")
    assert not missing, "undocumented refusals:\n" + "\n".join(missing)


# -- every example is true to its schema -------------------------------------------------------


def _strict(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable`` as JSON Schema says it, and objects closed to properties they
    do not name (an example's misspelt field is wrong, though a client would ignore it)."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _strict(value) for key, value in node.items()}
    if "properties" in node:
        node.setdefault("additionalProperties", False)
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


FORMATS = copy.deepcopy(jsonschema.Draft202012Validator.FORMAT_CHECKER)


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    return not isinstance(value, str) or datetime.fromisoformat(value).tzinfo is not None


def validator(schema: dict[str, Any], node: dict[str, Any]) -> jsonschema.Draft202012Validator:
    root = {**node, "components": schema["components"]}
    return jsonschema.Draft202012Validator(_strict(root), format_checker=FORMATS)


def sse_events(text: str) -> list[dict[str, Any]]:
    """An event stream as ``{id, event, data}`` objects (``data`` parsed)."""
    events = []
    assert text.endswith("\n\n"), "an event ends with a blank line"
    for block in text.split("\n\n")[:-1]:
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data = json.loads(fields["data"])
        events.append({"id": fields["id"], "event": fields["event"], "data": data})
    return events


def check(schema: dict[str, Any], media_type: str, content: dict[str, Any], value: Any) -> None:
    """``value`` is valid for this media type and schema, or this raises."""
    check_against = validator(schema, content["schema"])
    if media_type == "text/event-stream":
        for event in sse_events(value):
            check_against.validate(event)
            frame = event["data"]
            assert frame["type"] == event["event"]
            # A run's stream names an event by its seq; a conversation's, by its run too.
            assert event["id"] in (str(frame["seq"]), f"{frame['run']}.{frame['seq']}")
            # The protocol's own frame, rebuilt: every field there, none extra.
            try:
                rebuilt = encode(SERVER_FRAMES[frame["type"]](**frame))
            except TypeError as error:
                raise AssertionError(f"not a {frame['type']} frame: {error}") from None
            assert rebuilt == frame
    elif media_type == "application/jsonl":
        check_against.validate(value)
        records = [json.loads(line) for line in value.splitlines()]
        assert records and all(isinstance(r, dict) and "type" in r for r in records)
    else:
        check_against.validate(value)


def test_every_example_is_valid_for_its_schema(schema):
    checked, wrong = 0, []
    for name, operation in operations(schema):
        for where, media_type, content in media(operation):
            for key, found in examples_of(content).items():
                try:
                    check(schema, media_type, content, found["value"])
                except (
                    AssertionError,
                    jsonschema.ValidationError,
                    LookupError,
                    ValueError,
                ) as error:
                    wrong.append(f"{name}: {where} {media_type} {key}: {str(error)[:300]}")
                checked += 1
    assert not wrong, "examples their schema refuses:\n" + "\n".join(wrong)
    assert checked > 150


def _fields(schema: dict[str, Any], node: dict[str, Any]) -> set[str]:
    """Every property name a (request) schema can hold, through refs and ``oneOf``."""
    if "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    names = set(node.get("properties", {}))
    for branch in node.get("oneOf", []) + node.get("allOf", []):
        names |= _fields(schema, branch)
    return names


def test_field_errors_name_the_fields_of_their_operation(schema):
    wrong = []
    for name, operation in operations(schema):
        known = {"non_field_errors"} | {p["name"] for p in operation.get("parameters", [])}
        for content in operation.get("requestBody", {}).get("content", {}).values():
            known |= _fields(schema, content["schema"])
        if name == "POST /api/conversations/import/":
            known.add("records")  # the JSON Lines body, as a whole
        answer = operation["responses"].get("400", {}).get("content", {}).get(PROBLEM, {})
        for key, found in examples_of(answer).items():
            errors = found["value"].get("errors", {})
            if any("Not a query parameter" in str(messages) for messages in errors.values()):
                continue  # names a parameter the operation does not take, by definition
            unknown = set(errors) - known
            if unknown:
                wrong.append(f"{name}: {key} names {sorted(unknown)}")
    assert not wrong, "field errors of fields the operation does not have:\n" + "\n".join(wrong)


# -- the refusals every operation shares are what the API answers -------------------------------


def _common(status: int, name: str) -> dict[str, Any]:
    return next(r.value() for r in examples.COMMON[status] if r.name == name)


@pytest.mark.django_db
def test_the_shared_refusals_are_the_answers_the_api_gives(api, client, alice_key, key_client):
    assert client.get("/api/profiles/").json() == _common(401, "No key")
    unsupported = api.post("/api/conversations/", "title=x", content_type="text/plain")
    assert unsupported.json() == _common(415, "Not a type this operation takes")
    big = api.generic("POST", "/api/keys/", "{}", content_type=JSON, CONTENT_LENGTH=str(2**40))
    assert (big.status_code, big.json()["code"]) == (413, _common(413, "Too large")["code"])
    ApiKey.objects.update(revoked="2026-01-01T00:00:00Z")
    refused = key_client(alice_key).get("/api/profiles/").json()
    assert refused == _common(401, "A refused key")


# -- what the API answers is what the schema says ----------------------------------------------


@pytest.fixture
def slow(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    ensure_demo_profile()


def _answer_schema(schema: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    return schema["paths"][path][method]["responses"][status]["content"][JSON]


@pytest.mark.django_db(transaction=True)
async def test_a_message_queued_behind_a_run_answers_its_documented_json_naming_the_run(
    schema, alice, alice_key, slow
):
    conversation = await Conversation.objects.acreate(owner=alice, title="queued")
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    messages = f"/api/conversations/{conversation.pk}/messages/"
    accepted = validator(
        schema, _answer_schema(schema, "/api/conversations/{id}/messages/", "post", "202")["schema"]
    )
    first = await client.post(messages, {"content": "one two three"}, content_type=JSON)
    try:
        accepted.validate(first.json())
        queued = await client.post(messages, {"content": "and then"}, content_type=JSON)
        assert (queued.status_code, queued["Content-Type"]) == (202, JSON)
        accepted.validate(queued.json())
        assert [m["content"] for m in queued.json()["pending"]] == ["and then"]
        assert queued.json()["run"] == first.json()["id"]
    finally:
        await client.delete(f"/api/conversations/{conversation.pk}/pending/")
        run_service.cancel(str(conversation.pk))
        await run_service.wait(first.json()["id"])
