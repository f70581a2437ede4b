"""Scoped API keys on ``/api/``: ``read`` for GETs, ``run`` for the rest, ``keys`` to create and
revoke keys; ``profiles`` hides and refuses the others; the session is never limited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile, ApiKey
from conversations.models import Conversation

pytestmark = pytest.mark.django_db

KEYS = "/api/keys/"
CONVERSATIONS = "/api/conversations/"


@pytest.fixture
def demo(db) -> AgentProfile:
    return ensure_demo_profile() or AgentProfile.objects.get(slug="demo")


@pytest.fixture
def other(demo) -> AgentProfile:
    """A second profile beside ``demo``, on the same model."""
    return AgentProfile.objects.create(slug="other", name="Other", model=demo.model)


@pytest.fixture
def scoped(alice, issue_key, key_client):
    """``scoped("read", profiles=None)``: a client with a key of alice's holding those scopes."""

    def make(*scopes: str, profiles: list[str] | None = None):
        return key_client(issue_key(alice, "scoped", scopes=scopes, profiles=profiles))

    return make


def assert_scope_refusal(response) -> None:
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "scope"
    assert body["type"] == "about:blank" and body["status"] == 403 and body["title"] == "Forbidden"
    assert body["detail"]


def test_a_new_key_can_read_and_run_but_not_manage_keys(alice):
    key, _ = ApiKey.objects.issue(user=alice, name="fresh")
    assert key.scope_list == ["read", "run"] and key.profile_list is None


def test_a_read_key_reads_but_cannot_start_a_conversation_or_a_run(scoped, alice, demo):
    conversation = Conversation.objects.create(owner=alice, profile=demo)
    reader = scoped("read")
    assert reader.get(CONVERSATIONS).status_code == 200
    assert reader.get(f"{CONVERSATIONS}{conversation.pk}/").status_code == 200
    assert_scope_refusal(reader.post(CONVERSATIONS, {"title": "x"}, format="json"))
    sent = reader.post(
        f"{CONVERSATIONS}{conversation.pk}/messages/", {"content": "hi"}, format="json"
    )
    assert_scope_refusal(sent)
    assert Conversation.objects.count() == 1
    assert not conversation.messages.exists()


def test_a_run_key_starts_a_conversation_but_cannot_read(scoped, demo):
    runner = scoped("run")
    assert runner.post(CONVERSATIONS, {"title": "x"}, format="json").status_code == 201
    assert_scope_refusal(runner.get(CONVERSATIONS))


def test_a_key_without_the_keys_scope_cannot_mint_or_revoke_keys(scoped, alice, issue_key):
    victim = ApiKey.objects.get(prefix=issue_key(alice, "victim").split("_")[1])
    client = scoped("read", "run")
    assert client.get(KEYS).status_code == 200
    assert_scope_refusal(client.post(KEYS, {"name": "successor"}, format="json"))
    assert_scope_refusal(client.delete(f"{KEYS}{victim.pk}/"))
    victim.refresh_from_db()
    assert victim.revoked is None
    assert not ApiKey.objects.filter(name="successor").exists()


def test_a_keys_key_mints_keys_with_the_scopes_asked_and_read_run_by_default(scoped):
    minter = scoped("read", "keys")
    default = minter.post(KEYS, {"name": "plain"}, format="json")
    # Left out, the default ``read run`` is cut to what the minter holds.
    assert default.status_code == 201 and default.json()["scopes"] == ["read"]
    # The minter lacks ``run``: a successor inherits no more than it holds.
    assert_scope_refusal(minter.post(KEYS, {"name": "more", "scopes": ["run"]}, format="json"))
    asked = minter.post(KEYS, {"name": "reader", "scopes": ["read"]}, format="json")
    assert asked.status_code == 201
    assert asked.json()["scopes"] == ["read"] and asked.json()["profiles"] is None
    assert ApiKey.objects.get(name="reader").scope_list == ["read"]


def test_the_session_manages_keys_and_its_new_keys_read_and_run(alice, session_client):
    browser = session_client(alice)
    token = browser.get(reverse("agents:keys")).cookies["csrftoken"].value
    created = browser.post(KEYS, {"name": "browser-made"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert created.status_code == 201
    assert created.json()["scopes"] == ["read", "run"]
    revoked = browser.delete(f"{KEYS}{created.json()['id']}/", HTTP_X_CSRFTOKEN=token)
    assert revoked.status_code == 204


def test_unknown_scopes_and_profiles_are_field_errors(api, demo):
    unknown_scope = api.post(KEYS, {"name": "x", "scopes": ["admin"]}, format="json")
    assert unknown_scope.status_code == 400 and "scopes" in unknown_scope.json()["errors"]
    none = api.post(KEYS, {"name": "x", "scopes": []}, format="json")
    assert none.status_code == 400 and "scopes" in none.json()["errors"]
    unknown_profile = api.post(KEYS, {"name": "x", "profiles": ["nope"]}, format="json")
    assert unknown_profile.status_code == 400 and "profiles" in unknown_profile.json()["errors"]
    assert not ApiKey.objects.filter(name="x").exists()


def test_a_profile_outside_the_keys_profiles_is_unlisted_and_refused(scoped, demo, other):
    client = scoped("read", "run", profiles=["other"])
    listed = client.get("/api/profiles/").json()["results"]
    assert [profile["slug"] for profile in listed] == ["other"]
    assert_scope_refusal(client.post(CONVERSATIONS, {"profile": "demo"}, format="json"))
    assert not Conversation.objects.exists()
    assert client.post(CONVERSATIONS, {"profile": "other"}, format="json").status_code == 201


def test_a_key_limited_to_profiles_mints_only_within_them(scoped, demo, other):
    minter = scoped("read", "run", "keys", profiles=["other"])
    wider = minter.post(KEYS, {"name": "wider", "profiles": ["demo"]}, format="json")
    assert_scope_refusal(wider)
    inherited = minter.post(KEYS, {"name": "inherits"}, format="json")
    assert inherited.status_code == 201 and inherited.json()["profiles"] == ["other"]


def test_api_keys_created_with_profiles_report_them(api, demo, other):
    created = api.post(KEYS, {"name": "p", "profiles": ["demo"]}, format="json")
    assert created.status_code == 201 and created.json()["profiles"] == ["demo"]
    assert ApiKey.objects.get(name="p").allows_profile("demo")
    assert not ApiKey.objects.get(name="p").allows_profile("other")


def test_an_operator_narrows_a_key_in_the_admin_and_it_takes_effect(
    client, alice, issue_key, key_client, demo, other
):
    raw = issue_key(alice, "wide", scopes=("read", "run", "keys"))
    key = ApiKey.objects.get(name="wide")
    client.force_login(get_user_model().objects.create_superuser("root", password="root-pw-123"))
    url = reverse("admin:agents_apikey_change", args=[key.pk])
    assert 'value="keys"' in client.get(url).content.decode()
    unknown = client.post(url, {"scopes": ["read"], "profiles": "nope"})
    assert unknown.status_code == 200 and "No profile" in unknown.content.decode()
    saved = client.post(url, {"scopes": ["read"], "profiles": "other"})
    assert saved.status_code == 302
    key.refresh_from_db()
    assert key.scope_list == ["read"] and key.profile_list == ["other"]
    narrowed = key_client(raw)
    assert_scope_refusal(narrowed.post(CONVERSATIONS, {}, format="json"))
    assert [p["slug"] for p in narrowed.get("/api/profiles/").json()["results"]] == ["other"]
    listing = client.get(reverse("admin:agents_apikey_changelist")).content.decode()
    assert ">read<" in listing and ">other<" in listing
