"""API keys: issued once and stored hashed, managed through ``/api/keys/``, refused alike when
unusable, throttled per key; the settings page and the admin around them."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.test import APIClient

from agents.models import ApiKey, ConfigRevision

pytestmark = pytest.mark.django_db

KEYS = "/api/keys/"
KEY_SHAPE = re.compile(r"^ork_([a-z0-9]{8})_([A-Za-z0-9_-]{40,})$")
LISTED = {
    "id",
    "name",
    "prefix",
    "created",
    "last_used",
    "expires",
    "revoked",
    "scopes",
    "profiles",
}
INVALID = {
    "type": "about:blank",
    "title": "Unauthorized",
    "status": 401,
    "detail": "Invalid API key.",
    "code": "invalid_api_key",
}


def key_url(key_id: int) -> str:
    return f"{KEYS}{key_id}/"


def later(**delta) -> str:
    return (timezone.now() + timedelta(**delta)).isoformat()


# -- create, list, revoke --


def test_create_answers_the_full_key_once_and_stores_only_its_hash(api, alice):
    response = api.post(KEYS, {"name": "deploy bot"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == LISTED | {"key"}
    match = KEY_SHAPE.match(body["key"])
    assert match, body["key"]
    assert body["prefix"] == match[1]
    assert body["name"] == "deploy bot"
    assert body["expires"] is None and body["revoked"] is None and body["last_used"] is None
    row = ApiKey.objects.get(pk=body["id"])
    assert row.user == alice
    assert row.digest == hashlib.sha256(match[2].encode()).hexdigest()
    stored = [str(value) for value in ApiKey.objects.filter(pk=row.pk).values().get().values()]
    assert not any(match[2] in value for value in stored)
    assert body["key"] not in api.get(KEYS).content.decode()


def test_the_list_holds_the_users_own_keys_newest_first_without_secrets(api, alice, bob, issue_key):
    issue_key(bob, "bob's")
    issue_key(alice, "second")
    response = api.get(KEYS)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [key["name"] for key in results] == ["second", "alice's laptop"]
    assert all(set(key) == LISTED for key in results)


def test_an_expiry_in_the_future_is_kept(api):
    expires = later(days=30)
    response = api.post(KEYS, {"name": "month", "expires": expires}, format="json")
    assert response.status_code == 201
    assert parse_datetime(response.json()["expires"]) == parse_datetime(expires)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "old", "expires": "2001-01-01T00:00:00Z"}, "expires"),
        ({"name": "now", "expires": later(seconds=-1)}, "expires"),
        ({"name": "bad", "expires": "tomorrow"}, "expires"),
    ],
    ids=["missing", "blank", "too-long", "past", "just-past", "not-a-date"],
)
def test_invalid_input_is_a_400_naming_the_field(api, payload, field):
    count = ApiKey.objects.count()
    response = api.post(KEYS, payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and field in body["errors"]
    assert ApiKey.objects.count() == count


def test_a_name_of_100_characters_is_accepted(api):
    assert api.post(KEYS, {"name": "x" * 100}, format="json").status_code == 201


def test_revoke_keeps_the_key_listed_as_revoked_and_refuses_it(api, alice, issue_key, key_client):
    other = issue_key(alice, "to revoke")
    other_id = ApiKey.objects.get(prefix=KEY_SHAPE.match(other)[1]).pk
    assert key_client(other).get(KEYS).status_code == 200
    response = api.delete(key_url(other_id))
    assert response.status_code == 204 and response.content == b""
    listed = {key["id"]: key for key in api.get(KEYS).json()["results"]}
    assert listed[other_id]["revoked"] is not None
    assert key_client(other).get(KEYS).json() == INVALID
    first = ApiKey.objects.get(pk=other_id).revoked
    assert api.delete(key_url(other_id)).status_code == 204  # again: changes nothing
    assert ApiKey.objects.get(pk=other_id).revoked == first


def test_another_users_key_is_a_404_and_stays_usable(api, bob, issue_key, key_client):
    bobs = issue_key(bob, "bob's")
    bobs_id = ApiKey.objects.get(user=bob).pk
    assert api.delete(key_url(bobs_id)).status_code == 404
    assert api.delete(key_url(10**9)).status_code == 404
    assert ApiKey.objects.get(pk=bobs_id).revoked is None
    assert key_client(bobs).get(KEYS).status_code == 200


# -- authentication --


def test_a_key_authenticates_as_its_user_and_records_its_use(api, alice_key):
    response = api.get(KEYS)
    assert response.status_code == 200
    assert [key["name"] for key in response.json()["results"]] == ["alice's laptop"]
    assert ApiKey.objects.get().last_used is not None


def test_last_used_is_written_at_most_once_a_minute(api, django_assert_num_queries):
    api.get(KEYS)
    first = ApiKey.objects.get().last_used
    # A fresh use: the key's read only, no write (then the page of keys).
    with django_assert_num_queries(2):
        api.get(KEYS)
    assert ApiKey.objects.get().last_used == first
    ApiKey.objects.update(last_used=first - timedelta(minutes=2))
    api.get(KEYS)
    assert ApiKey.objects.get().last_used > first


def _refused(client: APIClient) -> tuple[int, dict, str]:
    response = client.get(KEYS)
    return response.status_code, response.json(), response.headers.get("WWW-Authenticate")


def test_revoked_expired_unknown_and_malformed_keys_get_the_same_401(alice, issue_key, key_client):
    revoked = issue_key(alice, "revoked")
    ApiKey.objects.filter(name="revoked").revoke()
    expired = issue_key(alice, "expired", expires=timezone.now() + timedelta(seconds=30))
    ApiKey.objects.filter(name="expired").update(expires=timezone.now() - timedelta(seconds=1))
    good = issue_key(alice, "good")
    prefix = KEY_SHAPE.match(good)[1]
    wrong_secret = f"ork_{prefix}_{'A' * 43}"
    unknown = "ork_zzzzzzzz_" + "B" * 43
    answers = {
        name: _refused(key_client(key))
        for name, key in {
            "revoked": revoked,
            "expired": expired,
            "wrong secret": wrong_secret,
            "unknown": unknown,
            "malformed": "not-a-key",
            "empty prefix": "ork__secret",
        }.items()
    }
    assert all(answer == (401, INVALID, "Bearer") for answer in answers.values()), answers
    assert key_client(good).get(KEYS).status_code == 200


def test_a_bearer_header_of_three_words_is_refused_alike(alice_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {alice_key} extra")
    assert _refused(client) == (401, INVALID, "Bearer")


def test_an_inactive_users_key_is_refused(api, alice):
    get_user_model().objects.filter(pk=alice.pk).update(is_active=False)
    assert _refused(api) == (401, INVALID, "Bearer")


def test_no_credentials_is_a_401_asking_for_a_bearer_key(key_client):
    response = key_client(None).get(KEYS)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert response.json()["code"] == "not_authenticated"


def test_a_session_write_needs_the_csrf_token(alice, session_client):
    client = session_client(alice)
    assert client.get(KEYS).status_code == 200  # reads need no token
    refused = client.post(KEYS, {"name": "no token"}, format="json")
    assert refused.status_code == 403
    assert not ApiKey.objects.exists()
    page = client.get(reverse("agents:keys"))  # sets the CSRF cookie, as for the browser
    token = page.cookies["csrftoken"].value
    made = client.post(KEYS, {"name": "with token"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert made.status_code == 201
    key_id = made.json()["id"]
    assert client.delete(key_url(key_id)).status_code == 403
    assert client.delete(key_url(key_id), HTTP_X_CSRFTOKEN=token).status_code == 204


def test_a_key_needs_no_csrf_token(alice_key):
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {alice_key}")
    assert client.post(KEYS, {"name": "scripted"}, format="json").status_code == 201


# -- throttling --


@pytest.fixture
def two_a_minute(settings) -> None:
    # The ``settings`` fixture sends ``setting_changed``: DRF reloads ``api_settings``, and
    # restores them after the test.
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api_key": "2/min"},
    }


def test_over_the_rate_a_key_gets_429_with_retry_after(two_a_minute, api):
    assert [api.get(KEYS).status_code for _ in range(2)] == [200, 200]
    response = api.get(KEYS)
    assert response.status_code == 429
    assert 0 < int(response.headers["Retry-After"]) <= 60
    assert response.json()["code"] == "throttled"


def test_each_key_and_each_session_user_counts_apart(
    two_a_minute, api, alice, issue_key, key_client, session_client
):
    for _ in range(2):
        api.get(KEYS)
    assert api.get(KEYS).status_code == 429
    assert key_client(issue_key(alice, "another")).get(KEYS).status_code == 200
    session = session_client(alice)
    assert [session.get(KEYS).status_code for _ in range(3)] == [200, 200, 429]


def test_anonymous_callers_count_per_address(two_a_minute, key_client):
    # The schema is open to all; elsewhere an anonymous call is refused before any throttle.
    anonymous = key_client(None)
    codes = [anonymous.get("/api/schema/", {"format": "json"}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    other = key_client(None)
    other.defaults["REMOTE_ADDR"] = "192.0.2.7"
    assert other.get("/api/schema/", {"format": "json"}).status_code == 200


def test_the_default_rate_applies_without_an_override(api):
    assert all(api.get(KEYS).status_code == 200 for _ in range(5))


# -- the settings page --


def test_the_keys_page_needs_a_login(alice, client):
    url = reverse("agents:keys")
    assert url == "/settings/keys/"
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


def test_the_keys_page_loads_its_script_and_has_no_inline_script(alice, client):
    client.force_login(alice)
    response = client.get(reverse("agents:keys"))
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-api-url="{KEYS}"' in html
    assert 'src="/static/orkestrel/keys.js"' in html
    assert "csrfmiddlewaretoken" in html
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts and all("src=" in tag for tag in scripts), scripts
    assert 'href="/settings/keys/"' in html  # the nav links here


# -- the admin --


@pytest.fixture
def operator(db):
    return get_user_model().objects.create_superuser("root", password="root-pass-123")


def test_the_admin_lists_keys_without_their_hash_and_refuses_adding(
    client, operator, alice, issue_key
):
    raw = issue_key(alice, "listed")
    key = ApiKey.objects.get()
    client.force_login(operator)
    page = client.get(reverse("admin:agents_apikey_changelist"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "listed" in html and key.display_prefix in html
    assert key.digest not in html and raw not in html
    assert "Revoke selected keys" in html and "delete_selected" not in html
    detail = client.get(reverse("admin:agents_apikey_change", args=[key.pk]))
    assert detail.status_code == 200 and key.digest not in detail.content.decode()
    assert client.get(reverse("admin:agents_apikey_add")).status_code == 403
    changed = client.post(reverse("admin:agents_apikey_change", args=[key.pk]), {"name": "renamed"})
    assert changed.status_code == 200  # redisplayed: only scopes and profiles are editable
    assert ApiKey.objects.get().name == "listed"


def test_the_admin_revoke_action_refuses_the_keys(
    client, operator, alice, bob, issue_key, key_client
):
    alices, bobs = issue_key(alice, "a"), issue_key(bob, "b")
    kept = issue_key(alice, "kept")
    chosen = ApiKey.objects.exclude(name="kept").values_list("pk", flat=True)
    client.force_login(operator)
    response = client.post(
        reverse("admin:agents_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [str(pk) for pk in chosen]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Revoked 2 key(s)." in response.content.decode()
    assert key_client(alices).get(KEYS).status_code == 401
    assert key_client(bobs).get(KEYS).status_code == 401
    assert key_client(kept).get(KEYS).status_code == 200
    assert ApiKey.objects.filter(revoked__isnull=False).count() == 2


def test_deleting_a_user_in_the_admin_deletes_their_keys(client, operator, alice, issue_key):
    issue_key(alice, "goes with alice")
    client.force_login(operator)
    url = reverse("admin:auth_user_delete", args=[alice.pk])
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not ApiKey.objects.exists()


# -- the schema --


def test_the_openapi_schema_describes_the_keys_endpoints(key_client):
    response = key_client(None).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert set(paths["/api/keys/"]) >= {"get", "post"}
    assert "delete" in paths["/api/keys/{id}/"]
    created = paths["/api/keys/"]["post"]["responses"]["201"]
    assert "IssuedApiKey" in str(created)


def test_issuing_a_key_leaves_the_configuration_revision_alone(alice):
    before = list(ConfigRevision.objects.values_list("pk", "value"))
    ApiKey.objects.issue(user=alice, name="ci")
    assert list(ConfigRevision.objects.values_list("pk", "value")) == before
