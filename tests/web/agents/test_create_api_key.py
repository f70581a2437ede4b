"""``manage.py create_api_key``: issues a key whose last printed line is the key, and it works."""

from __future__ import annotations

import io

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from agents.models import ApiKey

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_throttle():
    cache.clear()  # the API's throttle counts there, and row ids repeat between tests
    yield
    cache.clear()


def create(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue().splitlines()


def test_the_last_line_is_the_key_and_it_authenticates(user):
    lines = create("ada", "--name", "ci runner")
    key = lines[-1]
    assert key.startswith("ork_") and " " not in key
    row = ApiKey.objects.get()
    assert row.user == user and row.name == "ci runner"
    assert key.startswith(f"ork_{row.prefix}_")
    assert all(key not in line for line in lines[:-1])  # printed once
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.get("/api/keys/")
    assert response.status_code == 200
    assert [item["name"] for item in response.json()["results"]] == ["ci runner"]


def test_each_run_issues_a_new_key_with_a_default_name(user):
    first, second = create("ada")[-1], create("ada")[-1]
    assert first != second
    assert list(ApiKey.objects.values_list("name", flat=True)) == ["command line"] * 2


def test_an_unknown_user_is_refused(db):
    with pytest.raises(CommandError, match="no user 'nobody'"):
        create("nobody")
    assert not ApiKey.objects.exists()


def test_an_inactive_user_is_refused(user):
    user.is_active = False
    user.save()
    with pytest.raises(CommandError, match="inactive"):
        create("ada")


def test_an_overlong_name_is_refused(user):
    with pytest.raises(CommandError, match="at most 100"):
        create("ada", "--name", "x" * 101)
    assert not ApiKey.objects.exists()
