"""Settings of a deployment, each read in a fresh process from the environment alone."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The environment of an HTTPS deployment behind a TLS-terminating proxy, as the README lists it.
HTTPS = {
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
}

CHECK_DEPLOY = """
import django
from django.core.management import call_command
django.setup()
call_command("check", deploy=True)
"""
# The API schema's own warnings are about its docs, not the deployment: other tests own them.
NOT_DEPLOYMENT = ("drf_spectacular.",)

SHOW = """
import django
from django.conf import settings
django.setup()
print(repr({name: getattr(settings, name) for name in %r}))
"""


def _environment(tmp_path: Path, **variables: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("SECURE_", "SESSION_", "CSRF_", "ALLOWED_", "DEBUG"))
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
            "DEBUG": "false",
            # An empty value also hides any key in the checkout's .env (it never overwrites).
            "SECRET_KEY": "",
        }
    )
    env.update(variables)
    return env


def _check_ids(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The ids of the issues ``check`` reported (``?: (security.W004) ...``)."""
    found = set(re.findall(r"\(([a-z_]+\.[A-Z]\d+)\)", done.stdout + done.stderr))
    return {check for check in found if not check.startswith(NOT_DEPLOYMENT)}


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _settings(env: dict[str, str], *names: str) -> dict[str, object]:
    done = _python(SHOW % (names,), env)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # our own repr of plain values


def test_check_deploy_is_clean_for_an_https_deployment(tmp_path):
    env = _environment(
        tmp_path,
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="chat.example.com",
        CSRF_TRUSTED_ORIGINS="https://chat.example.com",
        **HTTPS,
    )

    done = _python(CHECK_DEPLOY, env)

    assert done.returncode == 0, done.stderr
    assert _check_ids(done) == set(), done.stderr


def test_check_deploy_names_what_a_plain_http_install_lacks(tmp_path):
    env = _environment(tmp_path, SECRET_KEY=secrets.token_urlsafe(50))

    done = _python(CHECK_DEPLOY, env)

    assert done.returncode == 0, done.stderr
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= _check_ids(done)


def test_the_https_variables_reach_the_settings(tmp_path):
    env = _environment(tmp_path, SECRET_KEY=secrets.token_urlsafe(50), **HTTPS)

    values = _settings(
        env, "SESSION_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER"
    )

    assert values == {
        "SESSION_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    }


def test_a_malformed_proxy_header_is_refused(tmp_path):
    env = _environment(
        tmp_path, SECRET_KEY=secrets.token_urlsafe(50), SECURE_PROXY_SSL_HEADER="https"
    )

    done = _python(SHOW % (("DEBUG",),), env)

    assert done.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER must be 'HEADER,value'" in done.stderr


def test_without_debug_a_missing_secret_key_stops_the_server_with_a_clear_message(tmp_path):
    done = _python(SHOW % (("SECRET_KEY",),), _environment(tmp_path))

    assert done.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in done.stderr
    assert "make run" in done.stderr


def test_the_asgi_application_refuses_to_load_without_a_secret_key(tmp_path):
    done = _python("import orkestrel.asgi", _environment(tmp_path))

    assert done.returncode != 0
    assert "SECRET_KEY is not set" in done.stderr


def test_debug_mode_alone_may_run_on_a_development_key(tmp_path):
    values = _settings(_environment(tmp_path, DEBUG="true"), "SECRET_KEY")

    # Django's own deploy check flags keys with this prefix.
    assert str(values["SECRET_KEY"]).startswith("django-insecure-")


def test_testserver_is_not_an_allowed_host_by_default(tmp_path):
    values = _settings(_environment(tmp_path, SECRET_KEY="x" * 50), "ALLOWED_HOSTS")

    assert values == {"ALLOWED_HOSTS": ["127.0.0.1", "localhost"]}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder with the Makefile and a stand-in virtualenv, for its ``secret-key`` target."""
    if shutil.which("make") is None:
        pytest.skip("needs GNU make")
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (tmp_path / ".venv" / ".created").touch()
    return tmp_path


def _make_secret_key(folder: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "SECRET_KEY"}
    env.update(variables)
    return subprocess.run(
        ["make", "-s", "secret-key"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_make_run_writes_a_random_key_to_dot_env_once(checkout):
    (checkout / ".env").write_text("LOG_LEVEL=DEBUG")  # no final newline

    _make_secret_key(checkout)
    first = (checkout / ".env").read_text()
    _make_secret_key(checkout)

    assert (checkout / ".env").read_text() == first
    lines = first.splitlines()
    assert lines[0] == "LOG_LEVEL=DEBUG"
    assert lines[1].startswith("SECRET_KEY=")
    assert len(lines[1].removeprefix("SECRET_KEY=")) >= 50
    assert len(lines) == 2


def test_a_new_dot_env_is_readable_by_its_owner_only(checkout):
    _make_secret_key(checkout)

    assert (checkout / ".env").stat().st_mode & 0o777 == 0o600


def test_make_run_leaves_dot_env_alone_when_the_environment_has_a_key(checkout):
    _make_secret_key(checkout, SECRET_KEY="from-the-environment")

    assert not (checkout / ".env").exists()
