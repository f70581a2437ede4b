"""The operators' admin: every page renders, rules save in order, the evaluator decides."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse

from agents.admin import ToolAdmin
from agents.models import (
    AgentProfile,
    AuthorityPolicy,
    AuthorityRule,
    Instruction,
    ProviderEndpoint,
    Scope,
    Tool,
)
from agents.sandbox import Sandbox

pytestmark = pytest.mark.django_db

MODELS = [ProviderEndpoint, Tool, AuthorityPolicy, Scope, Instruction, AgentProfile]


@pytest.fixture
def rows() -> dict[str, object]:
    """One saved row of every model, so changelists and change pages have content."""
    endpoint = ProviderEndpoint.objects.create(
        name="local", kind="ollama", base_url="http://127.0.0.1:11434", api_key_env="OLLAMA_API_KEY"
    )
    tool = Tool.objects.create(
        name="get_item",
        kind="http",
        parameters={"type": "object", "properties": {"id": {"type": "string"}}},
        url_template="https://api.example.com/items/{id}",
    )
    policy = AuthorityPolicy.objects.create(name="guard")
    AuthorityRule.objects.create(policy=policy, position=1, tool_glob="delete_*", reason="no")
    scope = Scope.objects.create(name="narrow", tools=["get_item"])
    instruction = Instruction.objects.create(name="tone", content="Be brief.")
    profile = AgentProfile.objects.create(
        slug="helper", name="Helper", model="local/llama3.2", scope=scope, authority_policy=policy
    )
    profile.tools.add(tool)
    profile.instructions.add(instruction)
    return {
        "providerendpoint": endpoint,
        "tool": tool,
        "authoritypolicy": policy,
        "scope": scope,
        "instruction": instruction,
        "agentprofile": profile,
    }


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:agents_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelist_add_and_change_pages_render(admin_client, rows, model):
    assert admin_client.get(admin_url(model, "changelist")).status_code == 200
    assert admin_client.get(admin_url(model, "add")).status_code == 200
    row = rows[model._meta.model_name]
    assert admin_client.get(admin_url(model, "change", row.pk)).status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelist_search_renders(admin_client, rows, model):
    response = admin_client.get(admin_url(model, "changelist"), {"q": "e"})
    assert response.status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_anonymous_users_are_sent_to_the_login(client, model):
    response = client.get(admin_url(model, "changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_endpoint_pages_show_whether_the_key_is_set_never_the_key(admin_client, rows, monkeypatch):
    endpoint = rows["providerendpoint"]
    monkeypatch.setenv("OLLAMA_API_KEY", "very-secret-key-value")
    listing = admin_client.get(admin_url(ProviderEndpoint, "changelist")).content.decode()
    change = admin_client.get(admin_url(ProviderEndpoint, "change", endpoint.pk)).content.decode()
    assert "OLLAMA_API_KEY: set" in listing and "OLLAMA_API_KEY: set" in change
    assert "very-secret-key-value" not in listing + change
    monkeypatch.delenv("OLLAMA_API_KEY")
    listing = admin_client.get(admin_url(ProviderEndpoint, "changelist")).content.decode()
    assert "OLLAMA_API_KEY: not set" in listing


def test_tool_page_shows_parameters_as_indented_json(admin_client, rows):
    page = admin_client.get(admin_url(Tool, "change", rows["tool"].pk)).content.decode()
    assert "{\n  &quot;type&quot;: &quot;object&quot;" in page


def test_adding_an_endpoint_with_a_key_as_its_variable_is_refused(admin_client):
    response = admin_client.post(
        admin_url(ProviderEndpoint, "add"),
        {
            "name": "openai",
            "kind": "openai",
            "base_url": "https://api.openai.com/v1",
            "models": "[]",
            "api_key_env": "sk-proj-abcdef0123456789",
            "connect_timeout": "10",
            "read_timeout": "300",
            "max_retries": "2",
        },
    )
    assert response.status_code == 200
    assert "looks like an API key" in response.content.decode()
    assert not ProviderEndpoint.objects.exists()


def profile_form(**overrides) -> dict[str, object]:
    data = {
        "name": "Writer",
        "slug": "writer",
        "description": "",
        "enabled": "on",
        "model": "local/llama3.2",
        "thinking": "",
        "system_prompt": "You write.",
        "limit": "10",
        "timeout": "300",
        "token_budget": "",
        "context_window": "",
        "keep": "4",
        "sections_cap": "",
        "tools": [],
        "instructions": [],
        "scope": "",
        "authority_policy": "",
        "approval_timeout": "",
        "approval_timeout_action": "deny",
    }
    return {**data, **overrides}


def test_adding_a_profile_validates_its_model(admin_client, rows):
    url = admin_url(AgentProfile, "add")
    refused = admin_client.post(url, profile_form(model="elsewhere/llama3.2"))
    assert refused.status_code == 200
    assert "No provider endpoint is named" in refused.content.decode()
    assert not AgentProfile.objects.filter(slug="writer").exists()
    created = admin_client.post(url, profile_form(tools=[rows["tool"].pk]))
    assert created.status_code == 302
    assert list(AgentProfile.objects.get(slug="writer").tools.all()) == [rows["tool"]]


def test_a_second_default_profile_is_refused_in_the_form(admin_client, rows):
    AgentProfile.objects.filter(slug="helper").update(is_default=True)
    response = admin_client.post(admin_url(AgentProfile, "add"), profile_form(is_default="on"))
    assert response.status_code == 200
    assert "already the default profile" in response.content.decode()
    assert not AgentProfile.objects.filter(slug="writer").exists()


def test_make_default_action_moves_the_default(admin_client, rows):
    helper = rows["agentprofile"]
    other = AgentProfile.objects.create(slug="b", name="B", model="local/x", is_default=True)
    response = admin_client.post(
        admin_url(AgentProfile, "changelist"),
        {"action": "make_default", "_selected_action": [helper.pk]},
        follow=True,
    )
    assert "is now the default profile" in response.content.decode()
    helper.refresh_from_db()
    other.refresh_from_db()
    assert helper.is_default and not other.is_default


# -- authority rules inline -----------------------------------------------------------------


def policy_form(policy: AuthorityPolicy | None, rules: list[dict[str, object]]) -> dict:
    data: dict[str, object] = {
        "name": policy.name if policy else "new-policy",
        "fallback_allowed": "on",
        "fallback_zone": "default",
        "fallback_reason": "",
        "rules-TOTAL_FORMS": str(len(rules)),
        "rules-INITIAL_FORMS": str(sum(1 for rule in rules if rule.get("id"))),
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
    }
    for index, rule in enumerate(rules):
        fields = {
            "zone": "default",
            "conditions": "{}",
            "reason": "",
            "id": "",
            "verdict": "deny",
            "approver": "owner",
            **rule,
        }
        if policy is not None:
            fields["policy"] = policy.pk
        for key, value in fields.items():
            data[f"rules-{index}-{key}"] = value
    return data


def test_policy_and_its_rules_are_added_in_one_form(admin_client):
    response = admin_client.post(
        admin_url(AuthorityPolicy, "add"),
        policy_form(
            None,
            [
                {"position": "2", "tool_glob": "*", "verdict": "allow"},
                {
                    "position": "1",
                    "tool_glob": "delete_*",
                    "conditions": '{"force": {"exists": true}}',
                },
            ],
        ),
    )
    assert response.status_code == 302
    policy = AuthorityPolicy.objects.get(name="new-policy")
    assert [(r.position, r.tool_glob, r.allowed) for r in policy.rules.all()] == [
        (1, "delete_*", False),
        (2, "*", True),
    ]


def test_rules_can_swap_positions_in_one_save(admin_client):
    policy = AuthorityPolicy.objects.create(name="swap")
    first = AuthorityRule.objects.create(policy=policy, position=1, tool_glob="a_*")
    second = AuthorityRule.objects.create(policy=policy, position=2, tool_glob="b_*")
    response = admin_client.post(
        admin_url(AuthorityPolicy, "change", policy.pk),
        policy_form(
            policy,
            [
                {"id": first.pk, "position": "2", "tool_glob": "a_*"},
                {"id": second.pk, "position": "1", "tool_glob": "b_*"},
            ],
        ),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert [r.tool_glob for r in policy.rules.order_by("position")] == ["b_*", "a_*"]


def test_two_rules_at_one_position_are_a_form_error(admin_client):
    policy = AuthorityPolicy.objects.create(name="dup")
    response = admin_client.post(
        admin_url(AuthorityPolicy, "change", policy.pk),
        policy_form(
            policy,
            [{"position": "1", "tool_glob": "a_*"}, {"position": "1", "tool_glob": "b_*"}],
        ),
    )
    assert response.status_code == 200
    assert "Please correct the duplicate data" in response.content.decode()
    assert not policy.rules.exists()


def test_a_rule_with_a_bad_regex_is_a_form_error(admin_client):
    policy = AuthorityPolicy.objects.create(name="bad")
    response = admin_client.post(
        admin_url(AuthorityPolicy, "change", policy.pk),
        policy_form(
            policy,
            [{"position": "1", "tool_glob": "*", "conditions": '{"p": {"pattern": "("}}'}],
        ),
    )
    assert response.status_code == 200
    assert "not a valid regular expression" in response.content.decode()
    assert not policy.rules.exists()


# -- the evaluator --------------------------------------------------------------------------


@pytest.fixture
def guard() -> AuthorityPolicy:
    policy = AuthorityPolicy.objects.create(
        name="guard", fallback_allowed=False, fallback_zone="closed", fallback_reason="not listed"
    )
    AuthorityRule.objects.create(
        policy=policy,
        position=1,
        tool_glob="write_*",
        conditions={"path": {"pattern": "^/etc/"}},
        zone="system",
        reason="system files are read-only",
    )
    AuthorityRule.objects.create(
        policy=policy, position=2, tool_glob="write_*", zone="files", allowed=True
    )
    return policy


def evaluate(admin_client, policy, tool_name: str, arguments: str) -> str:
    url = admin_url(AuthorityPolicy, "evaluate", policy.pk)
    response = admin_client.post(url, {"tool_name": tool_name, "arguments": arguments})
    assert response.status_code == 200
    return response.content.decode()


def test_change_page_links_to_the_evaluator(admin_client, guard):
    page = admin_client.get(admin_url(AuthorityPolicy, "change", guard.pk)).content.decode()
    assert admin_url(AuthorityPolicy, "evaluate", guard.pk) in page


def test_evaluator_renders_its_form(admin_client, guard):
    response = admin_client.get(admin_url(AuthorityPolicy, "evaluate", guard.pk))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="tool_name"' in page and 'id="decision"' not in page


def test_evaluator_shows_a_denial_and_its_rule(admin_client, guard):
    page = evaluate(admin_client, guard, "write_file", '{"path": "/etc/passwd"}')
    assert '<td id="decision-verdict">denied</td>' in page
    assert '<td id="decision-zone">system</td>' in page
    assert "system files are read-only" in page
    assert '<td id="decision-rule">rule #1 deny write_*</td>' in page


def test_evaluator_shows_an_allow_and_its_rule(admin_client, guard):
    page = evaluate(admin_client, guard, "write_file", '{"path": "/tmp/x"}')
    assert '<td id="decision-verdict">allowed</td>' in page
    assert '<td id="decision-zone">files</td>' in page
    assert '<td id="decision-rule">rule #2 allow write_*</td>' in page


def test_evaluator_shows_the_fallback(admin_client, guard):
    page = evaluate(admin_client, guard, "delete_file", "{}")
    assert '<td id="decision-verdict">denied</td>' in page
    assert '<td id="decision-zone">closed</td>' in page
    assert '<td id="decision-rule">fallback</td>' in page
    assert "not listed" in page


@pytest.mark.parametrize(
    ("arguments", "message"),
    [("{not json", "Not valid JSON"), ("[1, 2]", "must be a JSON object")],
)
def test_evaluator_reports_bad_arguments_and_decides_nothing(
    admin_client, guard, arguments, message
):
    page = evaluate(admin_client, guard, "write_file", arguments)
    assert message in page
    assert 'id="decision"' not in page


def test_evaluator_is_behind_the_admin_login(client, guard):
    response = client.get(admin_url(AuthorityPolicy, "evaluate", guard.pk))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_evaluator_for_a_missing_policy_is_not_found(admin_client):
    assert admin_client.get(admin_url(AuthorityPolicy, "evaluate", 999999)).status_code == 404
    assert admin_client.get(admin_url(AuthorityPolicy, "evaluate", "nope")).status_code == 404


def test_deleting_a_rule_and_moving_another_into_its_place_saves(admin_client):
    policy = AuthorityPolicy.objects.create(name="shift")
    first = AuthorityRule.objects.create(policy=policy, position=1, tool_glob="a_*")
    second = AuthorityRule.objects.create(policy=policy, position=2, tool_glob="b_*")
    response = admin_client.post(
        admin_url(AuthorityPolicy, "change", policy.pk),
        policy_form(
            policy,
            [
                {"id": first.pk, "position": "1", "tool_glob": "a_*", "DELETE": "on"},
                {"id": second.pk, "position": "1", "tool_glob": "b_*"},
            ],
        ),
    )
    assert response.status_code == 302
    assert [(r.position, r.tool_glob) for r in policy.rules.all()] == [(1, "b_*")]


def test_scope_form_keeps_no_constraint_apart_from_none(admin_client):
    response = admin_client.post(
        admin_url(Scope, "add"),
        {
            "name": "reader",
            "instructions_mode": "all",
            "tools_mode": "only",
            "tools": "read_file",
            "files_mode": "none",
        },
    )
    assert response.status_code == 302
    scope = Scope.objects.get(name="reader")
    assert (scope.instructions, scope.tools, scope.files) == (None, ["read_file"], [])


def test_http_tool_form_reports_an_unknown_placeholder(admin_client):
    response = admin_client.post(
        admin_url(Tool, "add"),
        {
            "name": "get_item",
            "kind": "http",
            "enabled": "on",
            "timeout": "30",
            "summary": "",
            "description": "",
            "parameters": '{"type": "object", "properties": {"id": {"type": "string"}}}',
            "http_method": "GET",
            "url_template": "https://api.example.com/items/{item}",
            "header_env": "{}",
        },
    )
    assert response.status_code == 200
    assert "Placeholder {item} is not one of the tool" in response.content.decode()
    assert not Tool.objects.exists()


# -- command tools --


def command_form(**overrides: object) -> dict[str, object]:
    """The Tool add form for a valid command tool; an override of ``None`` leaves a box out."""
    data: dict[str, object] = {
        "name": "grep_notes",
        "kind": "command",
        "enabled": "on",
        "timeout": "10",
        "summary": "",
        "description": "Search the notes.",
        "parameters": json.dumps({"type": "object", "properties": {"pattern": {"type": "string"}}}),
        "http_method": "GET",
        "url_template": "",
        "header_env": "{}",
        "program": "grep",
        "argv": '["-rn", "--", "{pattern}", "."]',
        "workdir": "workspace",
        "output_limit": "65536",
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def test_a_command_tool_is_added_from_the_admin(admin_client):
    response = admin_client.post(admin_url(Tool, "add"), command_form(allow_network="on"))
    assert response.status_code == 302
    tool = Tool.objects.get(name="grep_notes")
    assert (tool.kind, tool.program, tool.workdir) == ("command", "grep", "workspace")
    assert tool.argv == ["-rn", "--", "{pattern}", "."]
    assert tool.allow_network is True and tool.safe is None and tool.output_limit == 65536


def executable(folder) -> str:
    path = folder / "tool.sh"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"program": ""}, "Command tools need a program."),
        ({"program": "bin/grep"}, "a bare program name looked up on the PATH (grep), not a"),
        (
            {"program": "no-such-program-orkestrel"},
            "No program 'no-such-program-orkestrel' on the commands' PATH "
            "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)",
        ),
        ({"program": "/nonexistent/grep"}, "No executable file at /nonexistent/grep on this"),
        ({"argv": '"-rn {pattern}"'}, "Enter a JSON list of strings, one per argument"),
        ({"argv": '["{pattern!r}"]'}, "Placeholder {pattern} in '{pattern!r}' must be a bare"),
        ({"argv": '["{missing}"]'}, "Placeholder {missing} is not one of the tool's parameters."),
        ({"argv": '["{oops"]'}, "Malformed argument '{oops'"),
        ({"output_limit": "0"}, "Enter a number of bytes from 1 to 10000000."),
        ({"timeout": "7200"}, "A command may run for at most 3600 seconds."),
        ({"workdir": "home"}, "Select a valid choice. home is not one of the available choices."),
        ({"kind": "http", "url_template": "https://x.example/"}, "Only command tools take a"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_the_command_tool_form_explains_each_problem(admin_client, overrides, message):
    response = admin_client.post(admin_url(Tool, "add"), command_form(**overrides))
    assert response.status_code == 200
    assert message in html.unescape(response.content.decode())
    assert not Tool.objects.exists()


def test_a_program_the_sandbox_cannot_see_is_refused(admin_client, tmp_path):
    program = executable(tmp_path)  # under the temporary directory, private in the sandbox
    response = admin_client.post(admin_url(Tool, "add"), command_form(program=program))
    assert response.status_code == 200
    assert "which command tools cannot see" in html.unescape(response.content.decode())


@pytest.fixture
def write_command(db) -> Tool:
    return Tool.objects.create(
        name="formatter", kind="command", program="sh", argv=["-c", "true"], workdir="workspace"
    )


def no_sandbox() -> Sandbox:
    return Sandbox(False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")


def a_sandbox() -> Sandbox:
    return Sandbox(True, "bubblewrap 0.8.0 (user namespace)")


def page(admin_client, url: str) -> str:
    """The page's text as a reader sees it (entities decoded)."""
    return html.unescape(admin_client.get(url).content.decode())


def test_without_a_sandbox_a_write_command_tool_page_and_the_list_warn(
    admin_client, write_command, monkeypatch
):
    monkeypatch.setattr(ToolAdmin, "sandbox", staticmethod(no_sandbox))
    warning = (
        "No OS sandbox on this server (bubblewrap (bwrap) is not installed: apt-get install "
        "bubblewrap). Command tools that are not safe run only under one, so calls to "
        "formatter are refused"
    )
    change = page(admin_client, admin_url(Tool, "change", write_command.pk))
    assert warning in change
    assert "command tools that are not safe are refused; safe ones run unconfined" in change
    assert warning in page(admin_client, admin_url(Tool, "changelist"))


def test_a_safe_command_tool_or_a_machine_with_a_sandbox_gets_no_warning(
    admin_client, write_command, monkeypatch
):
    monkeypatch.setattr(ToolAdmin, "sandbox", staticmethod(a_sandbox))
    change = page(admin_client, admin_url(Tool, "change", write_command.pk))
    assert "No OS sandbox" not in change
    assert "bubblewrap 0.8.0 (user namespace): command tools run confined" in change
    assert "No OS sandbox" not in page(admin_client, admin_url(Tool, "changelist"))
    monkeypatch.setattr(ToolAdmin, "sandbox", staticmethod(no_sandbox))
    Tool.objects.filter(pk=write_command.pk).update(safe=True)
    assert "No OS sandbox" not in page(admin_client, admin_url(Tool, "change", write_command.pk))
    assert "No OS sandbox" not in page(admin_client, admin_url(Tool, "changelist"))
