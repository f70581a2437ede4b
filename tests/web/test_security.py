"""Security headers and login throttling: CSP on every page kind, private caching, lockout."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from conversations.models import Conversation
from orkestrel.middleware import PrivateCacheControlMiddleware

pytestmark = pytest.mark.django_db

PASSWORD = "alice-pass-123"


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def alice_client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def operator_client() -> tuple[Client, int]:
    root = get_user_model().objects.create_superuser("root", email="root@example.com")
    client = Client()
    client.force_login(root)
    return client, root.pk


def _directives(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy on {response.request['PATH_INFO']}"
    parsed = {}
    for part in header.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


class _Scripts(HTMLParser):
    """The attributes of every ``<script>`` and ``<style>`` element, and of inline handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.elements.append((tag, dict(attrs)))
        self.handlers += [f"{tag} {name}" for name, _ in attrs if name.startswith("on")]


def _assert_strict_policy(response) -> None:
    """The header is the strict policy, and the page runs nothing the policy would block."""
    assert response.status_code == 200, response.request["PATH_INFO"]
    policy = _directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    for directive in ("script-src", "style-src"):
        assert "'unsafe-inline'" not in policy[directive]
        assert "'unsafe-eval'" not in policy[directive]
    nonces = {value for values in policy.values() for value in values if "nonce-" in value}
    page = _Scripts()
    page.feed(response.content.decode())
    assert not page.handlers, f"inline event handlers: {page.handlers}"
    for tag, attrs in page.elements:
        if tag == "script" and (attrs.get("src") or attrs.get("type") == "application/json"):
            continue  # a file from 'self', or data (json_script), not code
        nonce = attrs.get("nonce")
        assert nonce and f"'nonce-{nonce}'" in nonces, f"inline <{tag}> without the nonce"


def test_the_login_page_carries_the_policy(client):
    _assert_strict_policy(client.get(reverse("login")))


def test_the_chat_pages_carry_the_policy(alice, alice_client):
    conversation = Conversation.objects.create(owner=alice, title="Plans")
    _assert_strict_policy(alice_client.get(reverse("conversations:list")))
    _assert_strict_policy(alice_client.get(reverse("conversations:chat", args=[conversation.pk])))


def test_the_admin_pages_carry_the_policy(operator_client):
    client, root = operator_client
    _assert_strict_policy(client.get(reverse("admin:index")))
    _assert_strict_policy(client.get(reverse("admin:auth_user_changelist")))
    _assert_strict_policy(client.get(reverse("admin:auth_user_change", args=[root])))
    _assert_strict_policy(client.get(reverse("admin:agents_agentprofile_add")))


def test_the_api_docs_run_their_init_script_under_the_nonce(client):
    response = client.get(reverse("api-docs"))
    _assert_strict_policy(response)
    assert re.search(rb"<script nonce=\"[^\"]+\">\s*\"use strict\"", response.content)


def test_private_pages_are_not_stored_by_any_cache(alice_client):
    response = alice_client.get(reverse("conversations:list"))
    assert response.headers["Cache-Control"] == "private, no-store"


def test_cache_control_is_left_to_anonymous_pages_and_to_views_that_choose(client, operator_client):
    assert "Cache-Control" not in client.get("/healthz").headers
    admin, _ = operator_client
    # The admin's ``never_cache`` says more than ours; it is kept as the view set it.
    assert "must-revalidate" in admin.get(reverse("admin:index")).headers["Cache-Control"]


def test_the_cache_middleware_marks_only_signed_in_responses(alice):
    middleware = PrivateCacheControlMiddleware(lambda request: HttpResponse("ok"))
    request = RequestFactory().get("/")
    request.user = alice
    assert middleware(request).headers["Cache-Control"] == "private, no-store"

    chosen = PrivateCacheControlMiddleware(
        lambda request: HttpResponse("ok", headers={"Cache-Control": "max-age=60"})
    )
    assert chosen(request).headers["Cache-Control"] == "max-age=60"


def _login(client: Client, password: str):
    return client.post(reverse("login"), {"username": "alice", "password": password})


def test_the_sixth_login_after_five_failures_is_refused_even_with_the_right_password(alice):
    client = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(5):
        assert _login(client, "wrong-password").status_code in (200, 429)

    response = _login(client, PASSWORD)

    assert response.status_code == 429
    assert b"Too many sign-in attempts" in response.content
    assert "_auth_user_id" not in client.session
    # The lockout is for this username from this address: alice elsewhere still signs in.
    elsewhere = Client(REMOTE_ADDR="198.51.100.4")
    assert _login(elsewhere, PASSWORD).status_code == 302
    assert elsewhere.session["_auth_user_id"] == str(alice.pk)


def test_fewer_failures_than_the_limit_still_let_the_right_password_in(alice):
    client = Client(REMOTE_ADDR="203.0.113.8")
    for _ in range(4):
        assert _login(client, "wrong-password").status_code == 200

    assert _login(client, PASSWORD).status_code == 302
    assert client.session["_auth_user_id"] == str(alice.pk)


def test_the_admin_login_is_throttled_too(alice):
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(5):
        client.post(reverse("admin:login"), {"username": "alice", "password": "wrong"})

    response = client.post(reverse("admin:login"), {"username": "alice", "password": PASSWORD})

    assert response.status_code == 429


def test_the_https_redirect_spares_the_health_probe(client, settings):
    settings.SECURE_SSL_REDIRECT = True

    assert client.get("/healthz").status_code == 200
    login = client.get(reverse("login"))
    assert login.status_code == 301
    assert login.headers["Location"].startswith("https://")
