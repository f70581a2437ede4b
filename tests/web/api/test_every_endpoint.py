"""Every operation of the OpenAPI schema: signed out, a revoked key and over the rate.

Walks the served schema, so a new endpoint is covered the day it lands.
"""

from __future__ import annotations

import re

import pytest
from django.test import override_settings
from rest_framework.settings import api_settings

from agents.models import ApiKey

pytestmark = pytest.mark.django_db

OPEN = {"/api/schema/", "/api/docs/"}
METHODS = ("get", "post", "put", "patch", "delete")


def _sample(parameter: dict) -> str:
    """A value that routes for a path parameter (the object need not exist: 404 is fine)."""
    schema = parameter.get("schema", {})
    if schema.get("type") == "integer" or schema.get("pattern") == "^[0-9]+$":
        return "1"
    if schema.get("format") == "uuid":
        return "00000000-0000-0000-0000-000000000000"
    return "a.txt"


def operations(api) -> list[tuple[str, str]]:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    found = []
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            parameters = item[method].get("parameters", []) + item.get("parameters", [])
            values = {p["name"]: _sample(p) for p in parameters if p.get("in") == "path"}
            url = re.sub(r"\{(\w+)\}", lambda m, v=values: v.get(m.group(1), "1"), path)
            found.append((method, url))
    return found


def test_the_schema_lists_every_family_of_endpoints(api):
    paths = {url for _, url in operations(api)}
    for prefix in (
        "/api/keys/",
        "/api/profiles/",
        "/api/conversations/",
        "/api/runs/",
        "/api/jobs/",
    ):
        assert any(path.startswith(prefix) for path in paths), prefix


def test_every_operation_refuses_a_signed_out_caller_and_a_revoked_key(
    api, key_client, alice_key, client
):
    ops = operations(api)
    ApiKey.objects.filter(prefix=alice_key.split("_")[1]).update(revoked="2026-01-01T00:00:00Z")
    revoked = key_client(alice_key)
    for method, url in ops:
        if url in OPEN:
            continue
        assert getattr(client, method)(url).status_code == 401, (method, url)
        refused = getattr(revoked, method)(url)
        assert refused.status_code == 401, (method, url)
        assert refused.json()["code"] == "invalid_api_key"


def test_every_operation_is_throttled_per_key(api, issue_key, alice, key_client, settings):
    ops = [(m, u) for m, u in operations(api) if u not in OPEN]
    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "api_key": "1/min"}
    rest = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    with override_settings(REST_FRAMEWORK=rest):
        for method, url in ops:
            every = ("read", "run", "keys")  # a scope refusal (403) comes before the throttle
            caller = key_client(issue_key(alice, f"{method} {url}"[:100], scopes=every))
            getattr(caller, method)(url)  # the one request of the minute, whatever it answers
            over = getattr(caller, method)(url)
            assert over.status_code == 429, (method, url)
            assert int(over.headers["Retry-After"]) > 0
