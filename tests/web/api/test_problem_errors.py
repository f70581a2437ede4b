"""One error shape under ``/api/``: RFC 9457's problem details (``type``, ``title``, ``status``)
with the API's ``detail`` and ``code``, as ``application/problem+json``, for every refusal: an
unmatched path, a method, a type asked for or sent, a bad cursor, a query parameter the
operation does not take, and an uncaught error."""

from __future__ import annotations

import json

import pytest
from django.test import RequestFactory
from django.urls import get_resolver

from conversations.models import Conversation

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["type"] == "about:blank" and body["status"] == status
    assert body["code"] == code and body["detail"]
    return body


@pytest.mark.parametrize(
    "url", ["/api/runs/abc/", "/api/keys/-1/", "/api/nothing/", "/api/conversations/x/y/z/"]
)
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_a_path_no_operation_serves_is_a_404_problem_naming_it(api, url, method):
    body = problem(getattr(api, method)(url), 404, "not_found")
    assert body["title"] == "Not Found"
    assert f"{method.upper()} {url}" in body["detail"] and "/api/docs/" in body["detail"]


def test_without_a_key_an_unmatched_path_is_still_the_apis_404(key_client):
    problem(key_client(None).get("/api/runs/abc/"), 404, "not_found")


def test_a_get_without_its_trailing_slash_is_still_redirected_to_it(api):
    response = api.get("/api/conversations?cursor=x")
    assert response.status_code == 301
    assert response["Location"] == "/api/conversations/?cursor=x"


def test_method_accept_and_content_type_refusals_are_problems(api):
    assert problem(api.delete("/api/profiles/"), 405, "method_not_allowed")["title"] == (
        "Method Not Allowed"
    )
    problem(api.get("/api/profiles/", HTTP_ACCEPT="text/html"), 406, "not_acceptable")
    problem(
        api.post("/api/conversations/", "x", content_type="text/plain"),
        415,
        "unsupported_media_type",
    )


def test_a_validation_error_keeps_its_field_errors(api, alice):
    body = problem(
        api.patch(
            f"/api/conversations/{Conversation.objects.create(owner=alice).pk}/",
            {"title": "x" * 10_000},
            format="json",
        ),
        400,
        "invalid",
    )
    assert body["title"] == "Bad Request" and "title" in body["errors"]


def test_a_cursor_the_api_did_not_give_out_is_a_400_naming_it(api):
    body = problem(api.get("/api/conversations/?cursor=not-a-cursor"), 400, "invalid")
    assert list(body["errors"]) == ["cursor"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/conversations/?page_size=5",
        "/api/approvals/?status=all&conversation=1",
        "/api/profiles/?ordering=slug",
        "/api/usage/?from=2020-01-01",
    ],
)
def test_a_query_parameter_the_operation_does_not_take_is_a_400_naming_it(api, url):
    body = problem(api.get(url), 400, "invalid")
    (name,) = body["errors"]
    assert f"{name}=" in url
    assert "Not a query parameter of this operation" in body["errors"][name][0]


def test_the_parameters_an_operation_documents_are_taken(api, alice):
    conversation = Conversation.objects.create(owner=alice, title="trip")
    assert api.get("/api/approvals/?status=all").status_code == 200
    assert api.get("/api/conversations/search/?q=trip").status_code == 200
    assert api.get(f"/api/conversations/{conversation.pk}/messages/?format=json").status_code == 200


def test_search_takes_the_cursor_its_pages_link_to(api, alice):
    Conversation.objects.bulk_create(
        Conversation(owner=alice, title=f"trip {index}") for index in range(51)
    )
    first = api.get("/api/conversations/search/?q=trip").json()
    assert first["next"] is not None
    second = api.get(first["next"].removeprefix("http://testserver"))
    assert second.status_code == 200, second.content
    assert len(first["results"]) + len(second.json()["results"]) == 51


@pytest.mark.parametrize(
    ("path", "shape"),
    [("/api/conversations/", "problem"), ("/v1/chat/completions", "openai"), ("/", "page")],
)
def test_an_uncaught_error_is_answered_in_the_shape_of_the_api_it_is_under(path, shape):
    # Django's own lookup of the project's 500 handler, as it calls it for an uncaught error.
    handler = get_resolver().resolve_error_handler(500)
    response = handler(RequestFactory().get(path))
    assert response.status_code == 500
    if shape == "problem":
        assert response["Content-Type"] == PROBLEM
        assert json.loads(response.content)["code"] == "server_error"
    elif shape == "openai":
        assert json.loads(response.content)["error"]["code"] == "server_error"
    else:
        assert response["Content-Type"].startswith("text/html")
