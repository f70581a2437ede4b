"""The operators' admin in a real browser: an operator can set up an agent without the README.

The profile's model is picked from the endpoints' lists under help that reads; the rules of a
policy fit a 1280 px window; models and scope columns are edited as lists; an endpoint is
checked from its own page; a tool form shows its kind's fields. On the admin pages of profiles,
schedules, endpoints, tools and policies (and the login page), axe-core finds nothing serious or
critical, and nothing is logged to the console or blocked by the Content-Security-Policy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import Server
from .openai_setup import shell_json
from .upstream import MODEL, FakeUpstream
from .watched import CLEAN, Watched

pytestmark = pytest.mark.e2e

ENDPOINT = "pages-upstream"
WIDTH = 1280

# An operator's session and one row of each kind the pages show, made once for the module.
SETUP_CODE = """
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from agents.models import (
    AgentProfile, AuthorityPolicy, AuthorityRule, ProviderEndpoint, Scope, Tool,
)
user, _ = get_user_model().objects.get_or_create(
    username="pages-operator", defaults={"is_staff": True, "is_superuser": True}
)
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
endpoint = ProviderEndpoint.objects.create(
    name=ARGS["endpoint"], kind="openai", base_url=ARGS["url"],
    models=[ARGS["model"], "fake-model-mini"],
)
tool = Tool.objects.create(
    name="pages_get_item", kind="http",
    parameters={"type": "object", "properties": {"id": {"type": "string"}}},
    url_template="https://api.example.com/items/{id}",
)
policy = AuthorityPolicy.objects.create(name="pages-guard")
AuthorityRule.objects.create(
    policy=policy, position=1, tool_glob="workspace",
    conditions={"operation": {"in": ["write", "append", "prepend", "replace", "move", "remove"]}},
    verdict="ask", approver="staff",
    reason="Every change to the workspace waits for an operator to look at it first.",
)
AuthorityRule.objects.create(
    policy=policy, position=2, tool_glob="delete_*", verdict="deny", reason="No deletions."
)
scope = Scope.objects.create(name="pages-narrow", tools=["pages_get_item"], files=[])
profile = AgentProfile.objects.create(
    slug="pages-helper", name="Pages helper", model=ARGS["endpoint"] + "/" + ARGS["model"],
    scope=scope, authority_policy=policy,
)
from django.utils import timezone
from agents.models import Schedule, ScheduleRun
schedule = Schedule(
    user=user, profile=profile, name="pages-digest", prompt="Summarise the day",
    cron="0 9 * * 1-5", timezone="Europe/Lisbon",
)
schedule.plan(timezone.now())
schedule.save()
ScheduleRun.objects.create(schedule=schedule, trigger="cron", error="the profile was off")
print(json.dumps({
    "session": session.session_key, "endpoint": endpoint.pk, "tool": tool.pk,
    "policy": policy.pk, "scope": scope.pk, "profile": profile.pk,
    "schedule": str(schedule.pk),
}))
"""

STORED_CODE = """
from agents.models import ProviderEndpoint, Scope
scope = Scope.objects.get(pk=ARGS["scope"])
print(json.dumps({
    "models": ProviderEndpoint.objects.get(pk=ARGS["endpoint"]).models,
    "scope": [scope.instructions, scope.tools, scope.files],
}))
"""


@pytest.fixture(scope="module")
def rows(server: Server, upstream: FakeUpstream) -> dict[str, Any]:
    return shell_json(server, SETUP_CODE, endpoint=ENDPOINT, url=upstream.url, model=MODEL)


@pytest.fixture
def operator(open_context: Callable[..., Any], server: Server, rows: dict[str, Any]) -> Page:
    """A page logged in as the operator, in a 1280 x 800 window."""
    context = open_context(viewport={"width": WIDTH, "height": 800})
    context.add_cookies([{"name": server.cookie, "value": rows["session"], "url": server.url}])
    return context.new_page()


def url(model: str, view: str, pk: int | str | None = None) -> str:
    middle = f"{pk}/{view}/" if pk is not None else ("" if view == "changelist" else f"{view}/")
    return f"/admin/agents/{model}/{middle}"


def saved(page: Page) -> None:
    expect(page.locator(".messagelist .success").first).to_be_visible()


# -- the profile's model ------------------------------------------------------------------------


def test_the_model_help_reads_and_the_box_offers_the_endpoints_models(operator: Page) -> None:
    page = operator
    page.goto(url("agentprofile", "add"))
    expect(page.locator("#id_model_helptext")).to_contain_text("<endpoint-name>/<model>")
    offered = page.locator("#id_model_suggestions option").evaluate_all(
        "(options) => options.map((option) => option.value)"
    )
    assert f"{ENDPOINT}/{MODEL}" in offered and f"{ENDPOINT}/fake-model-mini" in offered
    assert "demo/echo" in offered  # the bootstrap's demo endpoint
    expect(page.locator("#id_model")).to_have_attribute("list", "id_model_suggestions")

    page.locator("#id_name").fill("Pages writer")
    page.locator("#id_model").fill(f"{ENDPOINT}/fake-model-mini")
    page.locator("input[name=_continue]").click()
    saved(page)
    expect(page.locator("#id_model")).to_have_value(f"{ENDPOINT}/fake-model-mini")


# -- the rules of a policy ----------------------------------------------------------------------


def test_every_rule_field_is_within_a_1280_px_window(operator: Page, rows: dict[str, Any]) -> None:
    page = operator
    page.goto(url("authoritypolicy", "change", rows["policy"]))
    rule = page.locator("#rules-0")
    expect(rule).to_be_visible()
    for field in ("position", "tool_glob", "zone", "verdict", "approver", "conditions", "reason"):
        box = rule.locator(f"[name=rules-0-{field}]").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, field
        label = rule.locator(f"label[for=id_rules-0-{field}]").bounding_box()
        assert label is not None and label["x"] + label["width"] <= WIDTH, field
    delete = rule.locator("[name=rules-0-DELETE]").bounding_box()
    assert delete is not None and delete["x"] + delete["width"] <= WIDTH
    # Nothing scrolls sideways: not the page, not the rules' own box.
    widths = page.evaluate(
        """() => [document.documentElement, document.getElementById("rules-group")]
            .map((node) => node.scrollWidth - node.clientWidth)"""
    )
    assert widths == [0, 0]


# -- models and scope columns as lists ----------------------------------------------------------


def test_models_and_scope_columns_are_edited_as_lists(
    operator: Page, server: Server, rows: dict[str, Any]
) -> None:
    page = operator
    page.goto(url("providerendpoint", "change", rows["endpoint"]))
    models = page.get_by_role("textbox", name=re.compile(r"^Models:?$"))
    expect(models).to_have_value(f"{MODEL}\nfake-model-mini")
    models.fill(f"{MODEL}\nfake-model-mini\nfake-model-large\n")
    page.locator("input[name=_continue]").click()
    saved(page)

    page.goto(url("scope", "change", rows["scope"]))
    tools = page.get_by_role("textbox", name="Tools, one per line")
    expect(tools).to_have_value("pages_get_item")
    instructions = page.get_by_role("textbox", name="Instructions, one per line")
    expect(instructions).to_be_hidden()  # "All instructions" is chosen
    page.get_by_label("Only these instructions, one per line:").check()
    expect(instructions).to_be_visible()
    instructions.fill("tone\nhouse-rules")
    page.get_by_label("All tools (no constraint)").check()
    expect(tools).to_be_hidden()
    page.get_by_label("Only these files, one per line:").check()
    page.get_by_role("textbox", name="Files, one per line").fill("notes.md")
    page.locator("input[name=_continue]").click()
    saved(page)
    expect(page.get_by_label("All tools (no constraint)")).to_be_checked()

    stored = shell_json(server, STORED_CODE, endpoint=rows["endpoint"], scope=rows["scope"])
    assert stored == {
        "models": [MODEL, "fake-model-mini", "fake-model-large"],
        "scope": [["tone", "house-rules"], None, ["notes.md"]],
    }


# -- Check connection ---------------------------------------------------------------------------


def test_check_connection_on_the_endpoints_page_reports_there(
    operator: Page, rows: dict[str, Any], upstream: FakeUpstream
) -> None:
    page = operator
    page.goto(url("providerendpoint", "change", rows["endpoint"]))
    page.get_by_role("button", name="Check connection").click()
    # The admin capitalises its messages' first letter.
    expect(page.locator(".messagelist .success")).to_have_text(
        f"P{ENDPOINT[1:]}: OK: {upstream.url}/models answered HTTP 200 OK, 1 models listed"
    )
    expect(page.locator("#id_name")).to_have_value(ENDPOINT)  # back on the endpoint's page


# -- a tool's kind ------------------------------------------------------------------------------


def test_a_tool_form_shows_only_its_kinds_fields(operator: Page, rows: dict[str, Any]) -> None:
    page = operator
    page.goto(url("tool", "add"))
    http = page.locator("fieldset.tool-kind-http")
    command = page.locator("fieldset.tool-kind-command")
    kind = page.locator("#id_kind")
    expect(kind).to_have_value("builtin")
    expect(http).to_be_hidden()
    expect(command).to_be_hidden()
    kind.select_option("http")
    expect(http).to_be_visible()
    expect(command).to_be_hidden()
    kind.select_option("command")
    expect(http).to_be_hidden()
    expect(command).to_be_visible()

    # A field the server refuses stays in view, whatever the kind: here the URL of an HTTP
    # tool turned into a command tool.
    page.goto(url("tool", "change", rows["tool"]))
    expect(command).to_be_hidden()
    kind.select_option("command")
    page.locator("#id_program").fill("grep")
    page.locator("input[name=_continue]").click()
    expect(page.locator(".errornote")).to_be_visible()
    expect(http).to_be_visible()
    expect(http.locator(".errorlist")).to_contain_text("Only HTTP tools take a URL template.")


# -- accessibility, the console and the policy --------------------------------------------------


PAGES = {
    "agentprofile": "profile",
    "schedule": "schedule",
    "providerendpoint": "endpoint",
    "tool": "tool",
    "authoritypolicy": "policy",
}


@pytest.mark.parametrize("model", list(PAGES))
def test_the_admin_pages_pass_axe_with_a_quiet_console_and_policy(
    operator: Page, rows: dict[str, Any], model: str
) -> None:
    watched = Watched(operator)
    pk = rows[PAGES[model]]
    assert watched.problems_at(url(model, "changelist"), "#result_list") == CLEAN
    assert watched.problems_at(url(model, "change", pk), "#content-main form") == CLEAN
    assert watched.problems_at(url(model, "add"), "#content-main form") == CLEAN


def test_the_login_page_passes_axe_with_a_quiet_console_and_policy(
    open_context: Callable[..., Any],
) -> None:
    watched = Watched(open_context(viewport={"width": WIDTH, "height": 800}).new_page())
    assert watched.problems_at("/accounts/login/", "form") == CLEAN
