"""The endpoints' check-connection action, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from agents.connection import check_endpoint
from agents.models import ProviderEndpoint

pytestmark = pytest.mark.django_db

KEY = "sk-test-0123456789abcdef"


def run_action(admin_client, *endpoints: ProviderEndpoint) -> tuple[list[str], str]:
    response = admin_client.post(
        reverse("admin:agents_providerendpoint_changelist"),
        {"action": "check_connection", "_selected_action": [e.pk for e in endpoints]},
        follow=True,
    )
    assert response.status_code == 200
    return [str(m) for m in get_messages(response.wsgi_request)], response.content.decode()


def test_openai_endpoint_is_checked_with_its_bearer_key(admin_client, loopback, monkeypatch):
    monkeypatch.setenv("TEST_OPENAI_API_KEY", KEY)
    endpoint = ProviderEndpoint.objects.create(
        name="oai", kind="openai", base_url=f"{loopback.url}/v1/", api_key_env="TEST_OPENAI_API_KEY"
    )
    notes, page = run_action(admin_client, endpoint)
    assert notes == [f"oai: OK: {loopback.url}/v1/models answered HTTP 200 OK, 2 models listed"]
    path, headers = loopback.requests[0]
    assert path == "/v1/models"
    assert headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in page


def test_anthropic_endpoint_is_checked_with_its_headers(admin_client, loopback, monkeypatch):
    monkeypatch.setenv("TEST_ANTHROPIC_API_KEY", KEY)
    endpoint = ProviderEndpoint.objects.create(
        name="claude", kind="anthropic", base_url=loopback.url, api_key_env="TEST_ANTHROPIC_API_KEY"
    )
    notes, page = run_action(admin_client, endpoint)
    assert notes[0].startswith("claude: OK:")
    path, headers = loopback.requests[0]
    assert path == "/v1/models"
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert KEY not in page


def test_ollama_endpoint_lists_its_tags(admin_client, loopback):
    loopback.body = {"models": [{"name": "llama3.2"}]}
    endpoint = ProviderEndpoint.objects.create(name="local", kind="ollama", base_url=loopback.url)
    notes, _ = run_action(admin_client, endpoint)
    assert notes == [f"local: OK: {loopback.url}/api/tags answered HTTP 200 OK, 1 models listed"]
    assert loopback.requests[0][0] == "/api/tags"
    assert "authorization" not in loopback.requests[0][1]


def test_refused_key_is_reported_as_a_failure_without_the_body(admin_client, loopback, monkeypatch):
    monkeypatch.setenv("TEST_OPENAI_API_KEY", KEY)
    loopback.status = 401
    loopback.body = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    endpoint = ProviderEndpoint.objects.create(
        name="oai", kind="openai", base_url=loopback.url, api_key_env="TEST_OPENAI_API_KEY"
    )
    notes, page = run_action(admin_client, endpoint)
    assert notes == [f"oai: failed: {loopback.url}/models answered HTTP 401 Unauthorized"]
    assert KEY not in page


def test_unset_key_variable_is_named_in_the_report(admin_client, loopback, monkeypatch):
    monkeypatch.delenv("TEST_MISSING_API_KEY", raising=False)
    loopback.status = 401
    endpoint = ProviderEndpoint.objects.create(
        name="oai", kind="openai", base_url=loopback.url, api_key_env="TEST_MISSING_API_KEY"
    )
    notes, _ = run_action(admin_client, endpoint)
    assert notes[0].startswith("oai: failed:")
    assert notes[0].endswith("(key variable TEST_MISSING_API_KEY is not set)")


def test_unreachable_endpoint_is_a_failure(admin_client):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The port is closed now: the connection is refused.
    endpoint = ProviderEndpoint.objects.create(
        name="gone", kind="ollama", base_url=f"http://127.0.0.1:{port}"
    )
    notes, _ = run_action(admin_client, endpoint)
    assert notes[0].startswith(f"gone: failed: could not reach http://127.0.0.1:{port}/api/tags")


def test_scripted_endpoint_is_always_ok_without_a_request(admin_client, loopback):
    endpoint = ProviderEndpoint.objects.create(name="demo", kind="scripted")
    notes, _ = run_action(admin_client, endpoint)
    assert notes == ["demo: OK: scripted endpoint: nothing to connect to"]
    assert loopback.requests == []


def test_each_selected_endpoint_gets_its_own_report(admin_client, loopback):
    first = ProviderEndpoint.objects.create(name="a", kind="ollama", base_url=loopback.url)
    second = ProviderEndpoint.objects.create(name="b", kind="scripted")
    notes, _ = run_action(admin_client, first, second)
    assert sorted(note.split(":")[0] for note in notes) == ["a", "b"]


def test_check_endpoint_reports_a_non_json_success(loopback):
    loopback.body = "plain"
    endpoint = ProviderEndpoint(name="x", kind="ollama", base_url=loopback.url)
    result = check_endpoint(endpoint)
    assert result.ok and result.detail == f"{loopback.url}/api/tags answered HTTP 200 OK"
