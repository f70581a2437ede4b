"""``create_api_key --scopes --profiles``: a key limited from the shell, ``read run`` if not."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import ApiKey

pytestmark = pytest.mark.django_db


def create(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue().splitlines()


def test_a_key_from_the_shell_reads_and_runs_unless_told(user):
    create("ada")
    key = ApiKey.objects.get()
    assert key.scope_list == ["read", "run"] and key.profile_list is None


def test_scopes_and_profiles_are_taken_and_said(user):
    ensure_demo_profile()
    lines = create("ada", "--scopes", "read,keys", "--profiles", "demo")
    key = ApiKey.objects.get()
    assert key.scope_list == ["read", "keys"] and key.profile_list == ["demo"]
    assert "scopes: read keys; profiles: demo" in lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--scopes", "read,admin"), "Unknown scope 'admin'"),
        (("--scopes", ""), "one scope at least"),
        (("--profiles", "nope"), "no profile 'nope'"),
    ],
)
def test_unknown_scopes_and_profiles_are_refused(user, args, message):
    with pytest.raises(CommandError, match=message):
        create("ada", *args)
    assert not ApiKey.objects.exists()
