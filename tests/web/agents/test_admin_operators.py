"""The admin an operator can use without the README: readable help, the model picked from the
endpoints' lists, names one per line, Check connection on the endpoint's page, kind fieldsets.

What the browser does with these pages (scripts, layout, accessibility) is in
``tests/e2e/test_admin_pages.py``; here is what the server renders and stores.
"""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from agents.models import AgentProfile, Instruction, ProviderEndpoint, Scope, Skill, Tool

pytestmark = pytest.mark.django_db


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:agents_{model._meta.model_name}_{view}", args=args)


def endpoint_form(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "local",
        "kind": "ollama",
        "base_url": "http://127.0.0.1:11434",
        "models": "",
        "api_key_env": "",
        "connect_timeout": "10",
        "first_token_timeout": "60",
        "stream_idle_timeout": "30",
        "read_timeout": "300",
        "max_retries": "2",
        "prices": "{}",
    }
    return {**data, **overrides}


def errors_of(response) -> str:
    return " ".join(
        re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode())
    )


# -- the profile's model ------------------------------------------------------------------------


def test_the_model_help_text_shows_its_angle_brackets_as_text(admin_client):
    page = admin_client.get(admin_url(AgentProfile, "add")).content.decode()
    assert "&lt;endpoint-name&gt;/&lt;model&gt;" in page
    assert "<endpoint-name>" not in page


def test_help_texts_of_other_pages_keep_their_angle_brackets_too(admin_client):
    page = admin_client.get(admin_url(Skill, "add")).content.decode()
    assert "/skill &lt;name&gt;" in page


def test_the_model_box_offers_every_listed_model_and_each_open_endpoint(admin_client):
    ProviderEndpoint.objects.create(
        name="local", kind="ollama", base_url="http://127.0.0.1:11434", models=["llama3.2", "qwen"]
    )
    ProviderEndpoint.objects.create(name="router", kind="openai", base_url="https://r.example/v1")
    page = admin_client.get(admin_url(AgentProfile, "add")).content.decode()
    box = re.search(r'<input[^>]*name="model"[^>]*>', page)
    assert box is not None and 'list="id_model_suggestions"' in box.group(0)
    datalist = re.search(r'<datalist id="id_model_suggestions">(.*?)</datalist>', page, re.S)
    assert datalist is not None
    values = re.findall(r'<option value="([^"]*)"', datalist.group(1))
    assert values == ["local/llama3.2", "local/qwen", "router/"]
    assert "any model, typed after the /" in datalist.group(1)


def test_a_model_picked_from_the_list_saves_the_profile(admin_client):
    ProviderEndpoint.objects.create(
        name="local", kind="ollama", base_url="http://127.0.0.1:11434", models=["llama3.2"]
    )
    form = {
        "name": "Writer",
        "slug": "writer",
        "enabled": "on",
        "model": "local/llama3.2",
        "thinking": "",
        "limit": "10",
        "timeout": "300",
        "keep": "4",
        "approval_timeout": "90",
        "approval_timeout_action": "wait",
    }
    response = admin_client.post(admin_url(AgentProfile, "add"), form)
    assert response.status_code == 302, errors_of(response)
    profile = AgentProfile.objects.get(slug="writer")
    assert (profile.model, profile.approval_timeout, profile.approval_timeout_action) == (
        "local/llama3.2",
        90,
        "wait",
    )


# -- an endpoint's models, one per line ---------------------------------------------------------


def test_an_endpoints_models_are_shown_one_per_line(admin_client):
    endpoint = ProviderEndpoint.objects.create(
        name="local", kind="ollama", base_url="http://127.0.0.1:11434", models=["llama3.2", "qwen"]
    )
    page = admin_client.get(admin_url(ProviderEndpoint, "change", endpoint.pk)).content.decode()
    area = re.search(r'<textarea name="models"[^>]*>(.*?)</textarea>', page, re.S)
    assert area is not None and html.unescape(area.group(1)).strip() == "llama3.2\nqwen"
    assert 'placeholder="llama3.2' in page  # an example in the empty box's place


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("llama3.2\r\n\r\n  qwen2.5-coder:7b  \r\n", ["llama3.2", "qwen2.5-coder:7b"]),
        ('["gpt-4o-mini", "meta-llama/llama-3"]', ["gpt-4o-mini", "meta-llama/llama-3"]),
        ("", []),
    ],
    ids=["lines", "pasted-json", "empty-means-any"],
)
def test_models_typed_one_per_line_are_stored_as_a_json_list(admin_client, typed, stored):
    response = admin_client.post(admin_url(ProviderEndpoint, "add"), endpoint_form(models=typed))
    assert response.status_code == 302, errors_of(response)
    assert ProviderEndpoint.objects.get(name="local").models == stored


def test_a_model_listed_twice_is_a_form_error(admin_client):
    response = admin_client.post(
        admin_url(ProviderEndpoint, "add"), endpoint_form(models="llama3.2\nllama3.2")
    )
    assert response.status_code == 200
    assert "llama3.2 is listed twice." in errors_of(response)
    assert not ProviderEndpoint.objects.filter(name="local").exists()


# -- a scope's columns: all, none, or only those listed -----------------------------------------


def scope_form(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "reader",
        "instructions_mode": "all",
        "instructions": "",
        "tools_mode": "all",
        "tools": "",
        "files_mode": "all",
        "files": "",
    }
    return {**data, **overrides}


def test_each_scope_column_stores_all_none_or_the_names_listed(admin_client):
    response = admin_client.post(
        admin_url(Scope, "add"),
        scope_form(
            instructions_mode="all",
            instructions="ignored while all is chosen",
            tools_mode="only",
            tools="workspace\nhttp_fetch\n",
            files_mode="none",
        ),
    )
    assert response.status_code == 302, errors_of(response)
    scope = Scope.objects.get(name="reader")
    assert (scope.instructions, scope.tools, scope.files) == (None, ["workspace", "http_fetch"], [])


def test_a_stored_scope_shows_its_choice_and_its_names(admin_client):
    scope = Scope.objects.create(name="narrow", instructions=None, tools=["get_item"], files=[])
    page = admin_client.get(admin_url(Scope, "change", scope.pk)).content.decode()
    checked = dict(re.findall(r'name="(\w+)_mode" value="(\w+)"[^>]*checked', page))
    assert checked == {"instructions": "all", "tools": "only", "files": "none"}
    area = re.search(r'<textarea name="tools"[^>]*>(.*?)</textarea>', page, re.S)
    assert area is not None and area.group(1).strip() == "get_item"
    assert "e.g. workspace, http_fetch" in page


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tools_mode": "only", "tools": "  \n"}, "List at least one name, or choose none."),
        ({"tools_mode": "only", "tools": "a\na"}, "a is listed twice."),
        ({"tools_mode": "some"}, "Choose all, none, or only those listed."),
    ],
    ids=["only-without-names", "twice", "unknown-choice"],
)
def test_a_scope_column_that_says_nothing_clear_is_a_form_error(admin_client, overrides, message):
    response = admin_client.post(admin_url(Scope, "add"), scope_form(**overrides))
    assert response.status_code == 200
    assert message in errors_of(response)
    assert not Scope.objects.filter(name="reader").exists()


def test_an_unchanged_scope_form_reports_no_change(admin_client):
    from agents.forms import ScopeForm

    scope = Scope.objects.create(name="narrow", instructions=None, tools=["get_item"], files=[])
    data = scope_form(name="narrow", tools_mode="only", tools="get_item", files_mode="none")
    assert ScopeForm(data, instance=scope).has_changed() is False
    assert ScopeForm({**data, "files_mode": "all"}, instance=scope).changed_data == ["files"]


# -- Check connection on the endpoint's own page ------------------------------------------------


def test_the_endpoint_page_has_a_check_connection_button(admin_client):
    endpoint = ProviderEndpoint.objects.create(name="local", kind="ollama", base_url="http://x")
    page = admin_client.get(admin_url(ProviderEndpoint, "change", endpoint.pk)).content.decode()
    action = admin_url(ProviderEndpoint, "check_connection", endpoint.pk)
    assert f'action="{action}"' in page
    assert "Check connection</button>" in page


def test_check_connection_reports_on_the_endpoints_page(admin_client, loopback):
    endpoint = ProviderEndpoint.objects.create(name="local", kind="ollama", base_url=loopback.url)
    loopback.body = {"models": [{"name": "llama3.2"}]}
    url = admin_url(ProviderEndpoint, "check_connection", endpoint.pk)
    response = admin_client.post(url, follow=True)
    assert response.redirect_chain == [(admin_url(ProviderEndpoint, "change", endpoint.pk), 302)]
    notes = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    assert notes == [
        ("success", f"local: OK: {loopback.url}/api/tags answered HTTP 200 OK, 1 models listed")
    ]
    assert loopback.requests[0][0] == "/api/tags"


def test_a_failed_check_is_an_error_message(admin_client, loopback):
    loopback.status = 401
    endpoint = ProviderEndpoint.objects.create(name="local", kind="ollama", base_url=loopback.url)
    url = admin_url(ProviderEndpoint, "check_connection", endpoint.pk)
    response = admin_client.post(url, follow=True)
    notes = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    assert notes == [
        ("error", f"local: failed: {loopback.url}/api/tags answered HTTP 401 Unauthorized")
    ]


def test_check_connection_takes_only_a_post_and_a_known_endpoint(admin_client, loopback):
    endpoint = ProviderEndpoint.objects.create(name="local", kind="ollama", base_url=loopback.url)
    assert (
        admin_client.get(admin_url(ProviderEndpoint, "check_connection", endpoint.pk)).status_code
        == 405
    )
    assert (
        admin_client.post(admin_url(ProviderEndpoint, "check_connection", 9999)).status_code == 404
    )
    assert loopback.requests == []


def test_check_connection_is_behind_the_admin_login(client, loopback):
    endpoint = ProviderEndpoint.objects.create(name="local", kind="ollama", base_url=loopback.url)
    response = client.post(admin_url(ProviderEndpoint, "check_connection", endpoint.pk))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert loopback.requests == []


# -- a tool form's kind fieldsets ---------------------------------------------------------------


def test_the_tool_form_marks_each_kinds_fieldset_and_loads_the_script_that_shows_it(admin_client):
    page = admin_client.get(admin_url(Tool, "add")).content.decode()
    http = re.search(r'<fieldset class="([^"]*)"[^>]*>\s*<h2[^>]*>HTTP</h2>', page)
    command = re.search(r'<fieldset class="([^"]*)"[^>]*>\s*<h2[^>]*>Command</h2>', page)
    assert http is not None and "tool-kind-http" in http.group(1).split()
    assert command is not None and "tool-kind-command" in command.group(1).split()
    assert 'src="/static/orkestrel/admin/tool-kind.js"' in page


def test_every_admin_page_loads_the_admin_styles_and_an_empty_favicon(admin_client):
    Instruction.objects.create(name="tone", content="Be brief.")
    page = admin_client.get(admin_url(Instruction, "changelist")).content.decode()
    assert 'href="/static/orkestrel/admin/admin.css"' in page
    assert '<link rel="icon" href="data:,">' in page
