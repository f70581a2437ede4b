"""What schemathesis found: requests the schema refuses are refused (a JSON ``0`` for a boolean
or a string, a blank profile, a ``wait`` that is no boolean, a blank filter or event id, a
field the operation does not take), and ``OPTIONS`` on any operation answers rather than
failing."""

from __future__ import annotations

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentJob, ApiKey
from conversations.models import Conversation, Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(alice) -> Conversation:
    ensure_demo_profile()
    return Conversation.objects.create(owner=alice, title="Trip")


def assert_field_error(response, field: str) -> None:
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"], response.json()


def test_json_bodies_are_read_with_their_schema_types(api, conversation):
    url = f"/api/conversations/{conversation.pk}/"
    assert_field_error(api.patch(url, {"archived": 0}, format="json"), "archived")
    assert_field_error(api.patch(url, {"title": 0}, format="json"), "title")
    assert_field_error(api.post("/api/conversations/", {"profile": ""}, format="json"), "profile")
    assert_field_error(api.post("/api/keys/", {"name": 0}, format="json"), "name")
    conversation.refresh_from_db()
    assert (conversation.title, conversation.archived) == ("Trip", False)
    assert Conversation.objects.count() == 1 and ApiKey.objects.count() == 1


def test_a_wait_that_is_no_boolean_is_refused_before_anything_is_sent(api, conversation):
    sent = api.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=null",
        {"content": "hi"},
        format="json",
    )
    assert_field_error(sent, "wait")
    assert not conversation.messages.exists()


def test_blank_run_filters_and_event_ids_are_refused(api, conversation):
    assert_field_error(api.get("/api/runs/?status="), "status")
    run = Run.objects.create(conversation=conversation, status="done")
    assert_field_error(api.get(f"/api/runs/{run.pk}/events/", HTTP_LAST_EVENT_ID=""), "after")


def test_options_describes_operations_without_a_serializer(api, conversation):
    run = Run.objects.create(conversation=conversation, status="done")
    answered = api.options(f"/api/runs/{run.pk}/cancel/")
    assert answered.status_code == 200 and "actions" not in answered.json()


def test_a_field_the_operation_does_not_take_is_refused_by_name_and_nothing_changes(
    api, conversation
):
    url = f"/api/conversations/{conversation.pk}/"
    misspelt = api.patch(url, {"titel": "Holiday"}, format="json")
    assert_field_error(misspelt, "titel")
    assert "does not take" in misspelt.json()["errors"]["titel"][0]
    assert_field_error(api.patch(url, {"title": "Holiday", "id": "x"}, format="json"), "id")
    made = api.post(
        "/api/schedules/",
        {"name": "n", "profile": "demo", "prompt": "p", "cron": "0 8 * * *", "errors": {}},
        format="json",
    )
    assert_field_error(made, "errors")
    conversation.refresh_from_db()
    assert conversation.title == "Trip"
    assert not conversation.owner.schedules.exists()


def test_every_json_body_refuses_other_fields_and_the_schema_says_so(api):
    schema = api.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    loose = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            component = components[body["schema"]["$ref"].rsplit("/", 1)[-1]]
            if "oneOf" in component:  # a workspace edit: each alternative is its own component
                continue
            if component.get("additionalProperties") is not False:
                loose.append(f"{method.upper()} {path}")
    assert loose == []


def test_a_job_with_a_misspelt_field_is_refused_and_none_is_made(api, conversation):
    refused = api.post(
        "/api/jobs/",
        {"messages": [{"role": "user", "content": "hi"}], "sytem": "Be brief."},
        format="json",
    )
    assert_field_error(refused, "sytem")
    assert not AgentJob.objects.exists()
