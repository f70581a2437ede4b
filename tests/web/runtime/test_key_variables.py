"""Key variables at run time: a row saved around validation still never sends a forbidden one.

The admin refuses such names (``tests/web/agents/test_models.py``); these rows are built
directly, as a shell, a fixture or a row from before the rule would be.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agents.connection import check_endpoint
from agents.models import ProviderEndpoint
from agents.models import Tool as ToolRow
from agents.runtime.arguments import guard_tool
from agents.runtime.http_tools import build_http_tool
from agents.runtime.providers import provider_for
from agents.validators import PROJECT_VARIABLES, key_variable_patterns, project_variables
from orkestrel.core import ProviderError, ToolManager

from .helpers import Reply, call

REPO = Path(__file__).resolve().parents[3]
SETTINGS = REPO / "orkestrel" / "settings.py"


@pytest.fixture(autouse=True)
def allow_loopback(settings):
    # The default key patterns alone, whatever ORKESTREL_KEY_VARIABLES this shell sets.
    settings.ORKESTREL = {
        **settings.ORKESTREL,
        "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"],
        "KEY_VARIABLES": [],
    }


def openai_endpoint(variable: str) -> ProviderEndpoint:
    return ProviderEndpoint(
        name="oai", kind="openai", base_url="https://api.example.com/v1", api_key_env=variable
    )


def header_tool(server, variable: str) -> ToolManager:
    row = ToolRow(
        name="items",
        kind=ToolRow.Kind.HTTP,
        url_template=f"{server.url}/items",
        header_env={"Authorization": variable},
    )
    return ToolManager(guard_tool(build_http_tool(row), timeout=row.timeout))


def test_every_variable_settings_reads_is_a_project_variable():
    source = SETTINGS.read_text()
    read = set(re.findall(r"\benv(?:\.\w+)?\(\s*\"([A-Z][A-Z0-9_]*)\"", source))
    declared = set(re.findall(r"^\s+([A-Z][A-Z0-9_]*)=\(", source, flags=re.MULTILINE))
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ORKESTREL_KEY_VARIABLES"} <= read
    assert {"DEBUG", "ALLOWED_HOSTS"} <= declared
    assert read | declared | PROJECT_VARIABLES <= project_variables()
    assert "CELERY_BROKER_URL" in project_variables()


def test_the_patterns_are_read_from_the_environment(tmp_path):
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "ORKESTREL_KEY_VARIABLES": "*_KEY,LLM_*",
        "SECRET_KEY": "settings-test-only",
    }
    script = (
        "import django\nfrom django.conf import settings\ndjango.setup()\n"
        "print(settings.ORKESTREL['KEY_VARIABLES'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "['*_KEY', 'LLM_*']"


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "HOME"])
def test_reading_a_forbidden_key_variable_is_a_provider_error(variable, monkeypatch):
    monkeypatch.setenv(variable, "the-project-secret")
    endpoint = openai_endpoint(variable)
    with pytest.raises(ProviderError) as caught:
        endpoint.api_key()
    assert caught.value.provider == "oai"
    assert caught.value.message.startswith(
        f"endpoint 'oai': refused its key variable: {variable!r}"
    )
    assert "the-project-secret" not in caught.value.message
    # The admin's "is it set?" column never raises, and never says a refused variable is usable.
    assert endpoint.api_key_set is False


def test_no_provider_is_built_with_a_forbidden_key_variable(monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "the-project-secret")
    with pytest.raises(ProviderError, match="one of this project's own settings"):
        provider_for(openai_endpoint("SECRET_KEY"), "gpt-x")


def test_the_connection_check_sends_nothing_for_a_forbidden_key_variable(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://user:password@db/orkestrel")
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"data": []})

    result = check_endpoint(openai_endpoint("DATABASE_URL"), transport=httpx.MockTransport(answer))
    assert result.ok is False
    assert result.detail.startswith("endpoint 'oai': refused its key variable: 'DATABASE_URL'")
    assert result.detail.endswith("Nothing was sent.")
    assert "password" not in result.detail
    assert sent == []


def test_configured_patterns_follow_the_defaults(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "KEY_VARIABLES": [" LLM_* ", ""]}
    assert key_variable_patterns() == ("*_API_KEY", "*_TOKEN", "LLM_*")


def test_configured_patterns_apply_at_run_time_too(settings, monkeypatch):
    settings.ORKESTREL = {**settings.ORKESTREL, "KEY_VARIABLES": ["*_KEY"]}
    monkeypatch.setenv("OLLAMA_KEY", "ollama-key")
    assert openai_endpoint("OLLAMA_KEY").api_key() == "ollama-key"
    with pytest.raises(ProviderError):
        openai_endpoint("SECRET_KEY").api_key()


@pytest.mark.parametrize(
    ("variable", "reason"),
    [("SECRET_KEY", "one of this project's own settings"), ("HOME", "not an allowed key")],
)
async def test_an_http_tool_never_sends_a_forbidden_header_variable(
    server, monkeypatch, variable, reason
):
    monkeypatch.setenv(variable, "the-project-secret")
    server.routes["/items"] = Reply(200, "ok")
    result = await call(header_tool(server, variable), "items")
    assert result.value is None
    assert result.error.startswith(
        f"refused the variable for header 'Authorization': {variable!r} is "
    )
    assert reason in result.error
    assert "the-project-secret" not in result.error
    assert server.seen == []


async def test_an_http_tool_sends_an_allowed_header_variable(server, monkeypatch):
    monkeypatch.setenv("ITEMS_API_KEY", "Bearer fine")
    server.routes["/items"] = Reply(200, "ok")
    result = await call(header_tool(server, "ITEMS_API_KEY"), "items")
    assert result.value == {"status": 200, "text": "ok"}
    assert server.seen[0].headers["authorization"] == "Bearer fine"
