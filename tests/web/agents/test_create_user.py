"""``manage.py create_user``: a user a fresh install can issue keys to, with a password printed
once or read from standard input (tests/test_readme_quickstart.py runs the README's lines on a
fresh install)."""

from __future__ import annotations

import io
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def create(*args: str, stdin: str | None = None, monkeypatch=None) -> list[str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("create_user", *args, stdout=out)
    return out.getvalue().splitlines()


def test_a_generated_password_is_printed_once_on_the_last_line_and_signs_in():
    lines = create("alice", "--email", "alice@example.com")
    password = lines[-1]
    assert len(password) >= 12 and " " not in password
    assert all(password not in line for line in lines[:-1])
    assert "'alice'" in lines[0]
    user = get_user_model().objects.get(username="alice")
    assert (user.email, user.is_staff, user.is_superuser, user.is_active) == (
        "alice@example.com",
        False,
        False,
        True,
    )
    assert user.check_password(password)


def test_a_password_from_stdin_is_used_and_never_printed(monkeypatch):
    lines = create(
        "bob", "--password-stdin", stdin="a-long-pass-phrase-42\n", monkeypatch=monkeypatch
    )
    assert lines == ["Created user 'bob' with the password from standard input."]
    assert get_user_model().objects.get(username="bob").check_password("a-long-pass-phrase-42")


def test_a_weak_password_from_stdin_is_refused_and_no_user_made(monkeypatch):
    with pytest.raises(CommandError, match="too common|too short"):
        create("carol", "--password-stdin", stdin="password\n", monkeypatch=monkeypatch)
    assert not get_user_model().objects.filter(username="carol").exists()


def test_an_empty_stdin_is_refused(monkeypatch):
    with pytest.raises(CommandError, match="no password on standard input"):
        create("dave", "--password-stdin", stdin="", monkeypatch=monkeypatch)


def test_an_existing_user_is_refused_and_kept():
    create("erin")
    before = get_user_model().objects.get(username="erin").password
    with pytest.raises(CommandError, match="user 'erin' exists already"):
        create("erin")
    assert get_user_model().objects.get(username="erin").password == before


@pytest.mark.parametrize(
    ("args", "problem"),
    [(("has space",), "Enter a valid username"), (("frank", "--email", "nope"), "valid email")],
)
def test_an_invalid_username_or_email_is_refused(args, problem):
    with pytest.raises(CommandError, match=problem):
        create(*args)
    assert not get_user_model().objects.exists()
