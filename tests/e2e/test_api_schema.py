"""Schemathesis over the whole OpenAPI schema, against the served app (Daphne, loopback).

Every generated request must answer without a server error, with a body its schema allows.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

KEY_CODE = """
from django.contrib.auth import get_user_model
from agents.models import ApiKey
print(ApiKey.objects.issue(user=get_user_model().objects.get(username="alice"), name="fuzz")[1])
"""


@pytest.fixture(scope="module")
def api_key(server) -> str:
    return server.shell(KEY_CODE).strip().splitlines()[-1]


@pytest.fixture(scope="module")
def api_schema(server, api_key):
    return schemathesis.openapi.from_url(
        f"{server.url}/api/schema/?format=json", headers={"Authorization": f"Bearer {api_key}"}
    )


@schemathesis.serializer("application/jsonl")
def _json_lines(ctx, value) -> bytes:
    """A conversation import's body: whatever was generated, as text (the import validates)."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_breaks_the_server_or_the_schema(case, server, api_key):
    case.call_and_validate(
        base_url=server.url,
        headers={"Authorization": f"Bearer {api_key}"},
        checks=[not_a_server_error, response_schema_conformance],
        timeout=30,
    )
