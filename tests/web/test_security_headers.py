"""Every kind of response carries the security headers, and the cookies their flags: pages,
the admin, JSON from the REST and OpenAI-compatible APIs, static files, the health probe."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from agents.models import ApiKey
from conversations.models import Conversation

pytestmark = pytest.mark.django_db

PASSWORD = "alice-pass-123"


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password=PASSWORD, is_staff=True)


def _assert_headers(response, *, page: bool, framed: bool = True) -> None:
    where = response.request["PATH_INFO"]
    assert response.status_code < 400, (where, response.status_code)
    if framed:
        assert response.headers.get("X-Frame-Options") == "DENY", where
    assert response.headers.get("X-Content-Type-Options") == "nosniff", where
    assert response.headers.get("Referrer-Policy") == "same-origin", where
    if page:
        policy = response.headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy, where


def test_every_kind_of_response_carries_the_security_headers(alice):
    anonymous = Client()
    _assert_headers(anonymous.get(reverse("login")), page=True)
    _assert_headers(anonymous.get(reverse("healthz")), page=False)
    # A script file is not a document a frame could show: no X-Frame-Options needed.
    _assert_headers(anonymous.get("/static/orkestrel/chat.js"), page=False, framed=False)
    _assert_headers(anonymous.get("/api/docs/"), page=True)
    signed_in = Client()
    signed_in.force_login(alice)
    conversation = Conversation.objects.create(owner=alice, title="Plans")
    _assert_headers(signed_in.get(reverse("conversations:list")), page=True)
    _assert_headers(signed_in.get(reverse("conversations:chat", args=[conversation.pk])), page=True)
    _assert_headers(signed_in.get("/settings/keys/"), page=True)
    _assert_headers(signed_in.get("/api/conversations/"), page=False)
    key = ApiKey.objects.issue(user=alice, name="headers")[1]
    programs = Client(headers={"Authorization": f"Bearer {key}"})
    _assert_headers(programs.get("/api/profiles/"), page=False)
    _assert_headers(programs.get("/v1/models"), page=False)
    operator = Client()
    operator.force_login(get_user_model().objects.create_superuser("root", email="r@example.com"))
    _assert_headers(operator.get(reverse("admin:index")), page=True)
    _assert_headers(operator.get(reverse("admin:agents_tool_changelist")), page=True)


def test_the_session_and_csrf_cookies_carry_their_flags(alice, settings):
    client = Client()
    form = client.get(reverse("login"))
    csrf = form.cookies["csrftoken"]
    assert csrf["samesite"] == "Lax" and not csrf["secure"]
    signed = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    session = signed.cookies[settings.SESSION_COOKIE_NAME]
    assert session["httponly"] and session["samesite"] == "Lax" and not session["secure"]


def test_a_deployment_over_https_marks_both_cookies_secure(alice, settings):
    # The settings the environment's SESSION_COOKIE_SECURE / CSRF_COOKIE_SECURE set.
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    client = Client()
    form = client.get(reverse("login"), secure=True)
    assert form.cookies["csrftoken"]["secure"]
    signed = client.post(reverse("login"), {"username": "alice", "password": PASSWORD}, secure=True)
    assert signed.cookies[settings.SESSION_COOKIE_NAME]["secure"]
