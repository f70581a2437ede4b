"""Validation of the agents models: each bad input is that field's error and saves nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction

from agents.models import (
    AgentProfile,
    AuthorityPolicy,
    AuthorityRule,
    Instruction,
    ProviderEndpoint,
    Scope,
    Tool,
)

pytestmark = pytest.mark.django_db


def save_validated(model_class: type[models.Model], /, **fields) -> models.Model:
    """The admin and services path: full_clean, then save."""
    instance = model_class(**fields)
    instance.full_clean()
    instance.save()
    return instance


def assert_field_error(model_class: type[models.Model], field: str, /, **fields) -> ValidationError:
    before = model_class.objects.count()
    with pytest.raises(ValidationError) as caught:
        save_validated(model_class, **fields)
    assert field in caught.value.message_dict, caught.value.message_dict
    assert model_class.objects.count() == before
    return caught.value


def endpoint(**overrides) -> ProviderEndpoint:
    fields = {"name": "local", "kind": "ollama", "base_url": "http://127.0.0.1:11434"}
    return save_validated(ProviderEndpoint, **{**fields, **overrides})


# -- ProviderEndpoint -----------------------------------------------------------------------


def test_endpoint_with_valid_fields_saves_with_defaults():
    saved = endpoint(api_key_env="OLLAMA_API_KEY", models=["llama3.2"])
    saved.refresh_from_db()
    assert (saved.connect_timeout, saved.read_timeout, saved.max_retries) == (10.0, 300.0, 2)
    assert saved.models == ["llama3.2"]
    assert str(saved) == "local (Ollama)"


@pytest.mark.parametrize("name", ["has space", "dots.not.ok", ""])
def test_endpoint_name_must_be_a_slug(name):
    assert_field_error(ProviderEndpoint, "name", name=name, kind="scripted")


@pytest.mark.parametrize(
    "value",
    ["sk-proj-abc123def456", "sk-ant-api03-xyz", "gsk_abcdef", "A1B2C3D4E5F6G7H8I9J0K1L2M3"],
)
def test_endpoint_rejects_an_api_key_pasted_as_the_variable_name(value):
    error = assert_field_error(
        ProviderEndpoint, "api_key_env", name="openai", kind="scripted", api_key_env=value
    )
    assert "looks like an API key" in error.message_dict["api_key_env"][0]
    assert value not in str(error.message_dict)


@pytest.mark.parametrize("value", ["openai_api_key", "1KEY", "MY-KEY", "KEY NAME"])
def test_endpoint_variable_name_must_be_an_environment_name(value):
    assert_field_error(
        ProviderEndpoint, "api_key_env", name="openai", kind="scripted", api_key_env=value
    )


def test_endpoint_needs_a_base_url_unless_scripted():
    assert_field_error(ProviderEndpoint, "base_url", name="openai", kind="openai")
    assert save_validated(ProviderEndpoint, name="demo", kind="scripted").base_url == ""


@pytest.mark.parametrize("url", ["https://u:p@example.com/v1", "https://token@example.com/v1"])
def test_endpoint_base_url_may_not_carry_credentials(url):
    assert_field_error(ProviderEndpoint, "base_url", name="o", kind="openai", base_url=url)


@pytest.mark.parametrize(
    ("field", "value"),
    [("connect_timeout", 0), ("read_timeout", -1.0), ("max_retries", 11), ("kind", "bedrock")],
)
def test_endpoint_bounds_are_field_errors(field, value):
    assert_field_error(ProviderEndpoint, field, **{"name": "o", "kind": "scripted", field: value})


@pytest.mark.parametrize("models_value", [["ok", 3], "gpt-4o", ["dup", "dup"], [""]])
def test_endpoint_models_must_be_a_list_of_distinct_names(models_value):
    assert_field_error(ProviderEndpoint, "models", name="o", kind="scripted", models=models_value)


def test_endpoint_api_key_reads_the_named_variable(monkeypatch):
    saved = endpoint(api_key_env="ORKESTREL_TEST_API_KEY")
    monkeypatch.delenv("ORKESTREL_TEST_API_KEY", raising=False)
    assert saved.api_key() is None and saved.api_key_set is False
    monkeypatch.setenv("ORKESTREL_TEST_API_KEY", "secret-value")
    assert saved.api_key() == "secret-value" and saved.api_key_set is True
    assert endpoint(name="nokey").api_key() is None


@pytest.mark.parametrize(
    "value",
    ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "LOG_LEVEL", "CONN_MAX_AGE"],
)
def test_endpoint_key_variable_may_not_be_one_the_project_reads(value, settings):
    # Even when the operator's patterns would match it.
    settings.ORKESTREL = {**settings.ORKESTREL, "KEY_VARIABLES": ["*"]}
    error = assert_field_error(
        ProviderEndpoint, "api_key_env", name="o", kind="scripted", api_key_env=value
    )
    assert error.message_dict["api_key_env"] == [
        f"{value!r} is one of this project's own settings: its value is never sent to an "
        "endpoint or a tool."
    ]


@pytest.mark.parametrize("value", ["HOME", "AWS_SECRET_ACCESS_KEY", "OLLAMA_KEY", "API_KEYS"])
def test_endpoint_key_variable_must_match_an_allowed_pattern(value, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "KEY_VARIABLES": []}  # the defaults alone
    error = assert_field_error(
        ProviderEndpoint, "api_key_env", name="o", kind="scripted", api_key_env=value
    )
    assert error.message_dict["api_key_env"] == [
        f"{value!r} is not an allowed key variable: use a name matching *_API_KEY, *_TOKEN "
        "(ORKESTREL_KEY_VARIABLES adds patterns)."
    ]


@pytest.mark.parametrize("value", ["OPENAI_API_KEY", "GITHUB_TOKEN", "X_API_KEY"])
def test_endpoint_key_variable_matching_a_default_pattern_saves(value):
    assert endpoint(api_key_env=value).api_key_env == value


def test_configured_patterns_extend_the_allowed_key_variables(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "KEY_VARIABLES": ["*_KEY", "LLM_*"]}
    assert endpoint(api_key_env="OLLAMA_KEY").api_key_env == "OLLAMA_KEY"
    assert endpoint(name="other", api_key_env="LLM_SECRET").api_key_env == "LLM_SECRET"
    assert_field_error(
        ProviderEndpoint, "api_key_env", name="o", kind="scripted", api_key_env="SECRET_KEY"
    )


def test_database_refuses_an_endpoint_without_base_url_even_unvalidated():
    with pytest.raises(IntegrityError), transaction.atomic():
        ProviderEndpoint.objects.create(name="raw", kind="openai", base_url="")


# -- Tool -----------------------------------------------------------------------------------

ITEM_SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def test_builtin_tool_defaults_to_an_argumentless_schema():
    tool = save_validated(Tool, name="clock")
    assert tool.parameters == {"type": "object", "properties": {}}
    assert (tool.kind, tool.enabled, tool.safe, tool.timeout) == ("builtin", True, None, 30.0)


@pytest.mark.parametrize("name", ["has space", "x" * 65, "dot.name", ""])
def test_tool_name_must_be_a_provider_safe_identifier(name):
    assert_field_error(Tool, "name", name=name)


def test_tool_parameters_must_be_a_valid_json_schema():
    error = assert_field_error(Tool, "parameters", name="t", parameters={"type": "objekt"})
    assert "Not a valid JSON Schema" in error.message_dict["parameters"][0]


def test_tool_parameters_must_describe_an_object():
    error = assert_field_error(Tool, "parameters", name="t", parameters={"type": "string"})
    assert '"type": "object"' in error.message_dict["parameters"][0]


def test_http_tool_with_known_placeholders_saves():
    tool = save_validated(
        Tool,
        name="get_item",
        kind="http",
        parameters=ITEM_SCHEMA,
        url_template="https://api.example.com/items/{id}",
        header_env={"Authorization": "ITEMS_TOKEN"},
    )
    assert tool.parameter_names() == ["id"]


@pytest.mark.parametrize(
    "template",
    [
        "https://api.example.com/items/{missing}",
        "https://api.example.com/items/{}",
        "https://api.example.com/items/{id.__class__}",
        "https://api.example.com/items/{id",
        "ftp://api.example.com/items/{id}",
    ],
)
def test_http_tool_url_template_placeholders_must_be_parameters(template):
    assert_field_error(
        Tool, "url_template", name="t", kind="http", parameters=ITEM_SCHEMA, url_template=template
    )


def test_http_tool_needs_a_url_template():
    assert_field_error(Tool, "url_template", name="t", kind="http")


def test_builtin_tool_takes_no_url_template():
    assert_field_error(Tool, "url_template", name="t", url_template="https://x.example/")


@pytest.mark.parametrize(
    "headers", [{"Bad Header": "TOKEN"}, {"Authorization": "sk-live-1234"}, ["TOKEN"]]
)
def test_http_tool_header_env_names_headers_and_variables(headers):
    assert_field_error(
        Tool,
        "header_env",
        name="t",
        kind="http",
        parameters=ITEM_SCHEMA,
        url_template="https://api.example.com/items/{id}",
        header_env=headers,
    )


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "HOME"])
def test_http_tool_header_variables_must_be_allowed_key_variables(variable, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "KEY_VARIABLES": []}
    error = assert_field_error(
        Tool,
        "header_env",
        name="t",
        kind="http",
        parameters=ITEM_SCHEMA,
        url_template="https://api.example.com/items/{id}",
        header_env={"Authorization": variable},
    )
    assert error.message_dict["header_env"][0].startswith(f"{variable!r} is ")


@pytest.mark.parametrize(
    "template",
    [
        "https://{id}/items",
        "https://{id}.example.com/items",
        "https://api.example.com:{id}/items",
        "https://api.example.com{id}",
        "https://user{id}@api.example.com/items",
    ],
)
def test_http_tool_placeholders_may_not_fill_the_scheme_host_or_port(template):
    error = assert_field_error(
        Tool, "url_template", name="t", kind="http", parameters=ITEM_SCHEMA, url_template=template
    )
    assert error.message_dict["url_template"] == [
        "Placeholders may fill the path and query only, never the scheme, host or port."
    ]


@pytest.mark.parametrize(
    "template",
    [
        "https://api.example.com/items/{id}",
        "https://api.example.com?{id}",
        "https://api.example.com:8443/x?id={id}#{id}",
    ],
)
def test_http_tool_placeholders_in_the_path_and_query_save(template):
    tool = save_validated(
        Tool, name="t", kind="http", parameters=ITEM_SCHEMA, url_template=template
    )
    assert tool.follow_cross_origin_redirects is False


def test_tool_timeout_must_be_positive():
    assert_field_error(Tool, "timeout", name="t", timeout=-1)


def test_database_refuses_an_http_tool_without_url_even_unvalidated():
    with pytest.raises(IntegrityError), transaction.atomic():
        Tool.objects.create(name="raw", kind="http", url_template="")


# -- AuthorityPolicy and AuthorityRule -----------------------------------------------------


@pytest.fixture
def policy() -> AuthorityPolicy:
    return save_validated(AuthorityPolicy, name="guarded")


@pytest.mark.parametrize("glob", ["", "   ", " delete_*"])
def test_rule_glob_must_be_a_non_empty_pattern(policy, glob):
    assert_field_error(AuthorityRule, "tool_glob", policy=policy, position=1, tool_glob=glob)


@pytest.mark.parametrize(
    "conditions",
    [
        ["path"],
        {"path": "^/etc"},
        {"path": {"pattern": "(unclosed"}},
        {"path": {"pattern": 3}},
        {"path": {"in": "abc"}},
        {"path": {"exists": "yes"}},
        {"path": {"equals": 1, "in": [1]}},
        {"path": {"startswith": "/"}},
        {"": {"exists": True}},
    ],
)
def test_rule_conditions_shape_and_regexes_are_validated(policy, conditions):
    assert_field_error(
        AuthorityRule, "conditions", policy=policy, position=1, tool_glob="*", conditions=conditions
    )


def test_rule_positions_are_unique_within_a_policy(policy):
    save_validated(AuthorityRule, policy=policy, position=1, tool_glob="*")
    with pytest.raises(ValidationError):
        save_validated(AuthorityRule, policy=policy, position=1, tool_glob="x")
    other = save_validated(AuthorityPolicy, name="other")
    save_validated(AuthorityRule, policy=other, position=1, tool_glob="*")
    assert AuthorityRule.objects.count() == 2


def test_rule_defaults_deny_in_the_default_zone(policy):
    rule = save_validated(AuthorityRule, policy=policy, position=1, tool_glob="delete_*")
    assert (rule.allowed, rule.zone, rule.conditions) == (False, "default", {})
    assert str(rule) == "#1 deny delete_*"


def rule(**fields) -> AuthorityRule:
    return AuthorityRule(position=1, tool_glob="write_file", **fields)


def test_matches_on_the_glob_alone_is_case_sensitive():
    deletes = AuthorityRule(position=1, tool_glob="delete_*")
    assert deletes.matches("delete_file", {})
    assert not deletes.matches("Delete_file", {})
    assert not deletes.matches("undelete_file", {})


def test_matches_equals_uses_json_equality():
    equals = rule(conditions={"mode": {"equals": 1}})
    assert equals.matches("write_file", {"mode": 1})
    assert equals.matches("write_file", {"mode": 1.0})
    assert not equals.matches("write_file", {"mode": True})
    assert not equals.matches("write_file", {"mode": "1"})
    assert not equals.matches("write_file", {})
    assert not equals.matches("read_file", {"mode": 1})


def test_matches_in_accepts_any_listed_value():
    listed = rule(conditions={"path": {"in": ["/etc/passwd", "/etc/shadow"]}})
    assert listed.matches("write_file", {"path": "/etc/shadow"})
    assert not listed.matches("write_file", {"path": "/tmp/x"})
    assert not listed.matches("write_file", {})


def test_matches_pattern_searches_strings_and_json_text():
    pattern = rule(conditions={"path": {"pattern": "^/etc/"}})
    assert pattern.matches("write_file", {"path": "/etc/hosts"})
    assert not pattern.matches("write_file", {"path": "/home/etc/hosts"})
    assert not pattern.matches("write_file", {})
    numeric = rule(conditions={"size": {"pattern": "^1\\d{3}$"}})
    assert numeric.matches("write_file", {"size": 1024})
    assert not numeric.matches("write_file", {"size": 24})


def test_matches_exists_checks_presence_or_absence():
    present = rule(conditions={"force": {"exists": True}})
    absent = rule(conditions={"force": {"exists": False}})
    assert present.matches("write_file", {"force": None})
    assert not present.matches("write_file", {})
    assert absent.matches("write_file", {})
    assert not absent.matches("write_file", {"force": False})


def test_matches_requires_every_condition():
    both = rule(conditions={"path": {"pattern": "^/etc/"}, "force": {"equals": True}})
    assert both.matches("write_file", {"path": "/etc/x", "force": True})
    assert not both.matches("write_file", {"path": "/etc/x", "force": False})
    assert not both.matches("write_file", {"path": "/tmp/x", "force": True})


# -- Scope and Instruction ------------------------------------------------------------------


def test_scope_lists_distinguish_no_constraint_from_none():
    scope = save_validated(Scope, name="narrow", tools=["read_file"], files=[])
    scope.refresh_from_db()
    core = scope.to_core()
    assert (core.name, core.instructions, core.tools, core.files) == (
        "narrow",
        None,
        ("read_file",),
        (),
    )


@pytest.mark.parametrize(
    ("field", "value"), [("tools", "read_file"), ("files", [1]), ("instructions", {"a": 1})]
)
def test_scope_lists_must_be_null_or_lists_of_names(field, value):
    assert_field_error(Scope, field, name="s", **{field: value})


def test_instruction_to_core_input_feeds_the_kit_manager():
    from orkestrel.core import InstructionManager

    first = save_validated(Instruction, name="tone", content="Be brief.", priority=5)
    second = save_validated(Instruction, name="fmt", content="x", format="- FORMAT")
    assert first.to_core_input() == {
        "name": "tone",
        "content": "Be brief.",
        "priority": 5,
        "format": None,
    }
    manager = InstructionManager()
    manager.add([first.to_core_input(), second.to_core_input()])
    assert [item.name for item in manager.instructions()] == ["tone", "fmt"]


# -- AgentProfile ---------------------------------------------------------------------------


def profile(**overrides) -> AgentProfile:
    fields = {"slug": "helper", "name": "Helper", "model": "local/llama3.2"}
    return save_validated(AgentProfile, **{**fields, **overrides})


def test_profile_model_splits_on_the_first_slash():
    router = endpoint(name="router", kind="openai", base_url="https://openrouter.ai/api/v1")
    saved = profile(model="router/meta-llama/llama-3")
    assert (saved.endpoint_name, saved.model_name) == ("router", "meta-llama/llama-3")
    assert saved.endpoint() == router


def test_profile_model_must_name_an_existing_endpoint():
    error = assert_field_error(AgentProfile, "model", slug="p", name="P", model="nowhere/llama3")
    assert "nowhere" in error.message_dict["model"][0]


@pytest.mark.parametrize("model", ["llama3.2", "local/", "/llama3.2"])
def test_profile_model_must_be_endpoint_slash_model(model):
    endpoint()
    assert_field_error(AgentProfile, "model", slug="p", name="P", model=model)


def test_profile_model_must_be_listed_when_the_endpoint_lists_models():
    endpoint(models=["llama3.2"])
    error = assert_field_error(AgentProfile, "model", slug="p", name="P", model="local/qwen3")
    assert "qwen3" in error.message_dict["model"][0]
    assert profile(model="local/llama3.2").model_name == "llama3.2"


def test_profile_accepts_any_model_when_the_endpoint_lists_none():
    endpoint()
    assert profile(model="local/anything:7b").model_name == "anything:7b"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("limit", 101),
        ("timeout", -5),
        ("timeout", 0),
        ("sections_cap", 0),
        ("thinking", "extreme"),
        ("slug", "not a slug"),
    ],
)
def test_profile_bounds_are_field_errors(field, value):
    endpoint()
    fields = {"slug": "p", "name": "P", "model": "local/llama3.2", field: value}
    assert_field_error(AgentProfile, field, **fields)


def test_profile_defaults():
    endpoint()
    saved = profile()
    assert (saved.limit, saved.timeout, saved.keep, saved.thinking) == (10, 300.0, 4, "")
    assert (saved.token_budget, saved.context_window, saved.sections_cap) == (None, None, None)
    assert saved.enabled and not saved.is_default


def test_only_one_profile_may_be_the_default():
    endpoint()
    profile(slug="a", is_default=True)
    assert_field_error(
        AgentProfile, "is_default", slug="b", name="B", model="local/llama3.2", is_default=True
    )
    profile(slug="c", is_default=False)
    assert AgentProfile.objects.filter(is_default=True).count() == 1


def test_database_refuses_a_second_default_profile_even_unvalidated():
    AgentProfile.objects.create(slug="a", name="A", model="x/y", is_default=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentProfile.objects.create(slug="b", name="B", model="x/y", is_default=True)


def test_database_refuses_out_of_range_profile_bounds_even_unvalidated():
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentProfile.objects.create(slug="a", name="A", model="x/y", limit=101)
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentProfile.objects.create(slug="b", name="B", model="x/y", timeout=0)


def test_deleting_a_scope_or_policy_keeps_the_profile():
    endpoint()
    scope = save_validated(Scope, name="s")
    guard = save_validated(AuthorityPolicy, name="g")
    saved = profile(scope=scope, authority_policy=guard)
    scope.delete()
    guard.delete()
    saved.refresh_from_db()
    assert saved.scope is None and saved.authority_policy is None


def test_an_endpoint_in_use_keeps_its_name_and_the_models_profiles_use():
    used = endpoint(models=["llama3.2", "qwen3"])
    profile(model="local/llama3.2")
    used.name = "renamed"
    with pytest.raises(ValidationError) as caught:
        used.full_clean()
    assert "helper" in caught.value.message_dict["name"][0]
    used.name = "local"
    used.models = ["qwen3"]
    with pytest.raises(ValidationError) as caught:
        used.full_clean()
    assert "llama3.2" in caught.value.message_dict["models"][0]
    used.models = []
    used.full_clean()


def test_an_unused_endpoint_may_be_renamed():
    unused = endpoint()
    unused.name = "renamed"
    unused.full_clean()
