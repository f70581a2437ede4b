"""Fixtures for the REST API tests: two users, an API key of alice's and clients that use it.

``api`` is a DRF ``APIClient`` sending ``Authorization: Bearer <alice_key>``; ``key_client``
makes one for any key (or none), and ``session_client`` one signed in by the session with CSRF
enforced, as the browser is.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from rest_framework.test import APIClient

from agents.models import ApiKey


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_throttle():
    """The throttle counts in the default cache; row ids repeat between tests, so counts of
    one test must not reach the next."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def alice(db) -> AbstractBaseUser:
    return get_user_model().objects.create_user("alice", password="alice-pass-123")


@pytest.fixture
def bob(db) -> AbstractBaseUser:
    return get_user_model().objects.create_user("bob", password="bob-pass-123")


@pytest.fixture
def issue_key() -> Callable[..., str]:
    """``issue_key(user, name="test", expires=None)``: a new key of ``user``, in full."""

    def issue(user: AbstractBaseUser, name: str = "test", **fields) -> str:
        return ApiKey.objects.issue(user=user, name=name, **fields)[1]

    return issue


@pytest.fixture
def alice_key(alice, issue_key) -> str:
    """Alice's API key, in full (``ork_<prefix>_<secret>``), with every scope."""
    return issue_key(alice, "alice's laptop", scopes=("read", "run", "keys"))


@pytest.fixture
def key_client() -> Callable[[str | None], APIClient]:
    """``key_client(key)``: an ``APIClient`` sending ``Authorization: Bearer <key>``."""

    def make(key: str | None) -> APIClient:
        client = APIClient()
        if key is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return client

    return make


@pytest.fixture
def api(alice_key, key_client) -> APIClient:
    """An ``APIClient`` authenticated with alice's API key."""
    return key_client(alice_key)


@pytest.fixture
def session_client() -> Callable[[AbstractBaseUser], APIClient]:
    """``session_client(user)``: signed in by the session, CSRF checked like a browser's."""

    def make(user: AbstractBaseUser) -> APIClient:
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(user)
        return client

    return make
