"""The tool admin: a tool's safety is one of three choices, and an HTTP tool's system field."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse

from agents.models import Tool

pytestmark = pytest.mark.django_db

ADD = reverse("admin:agents_tool_add")


def http_form(**overrides: object) -> dict[str, object]:
    """The Tool add form for a valid HTTP tool."""
    data: dict[str, object] = {
        "name": "items",
        "kind": "http",
        "enabled": "on",
        "safe": "",
        "timeout": "10",
        "parameters": json.dumps({"type": "object", "properties": {"id": {"type": "string"}}}),
        "http_method": "GET",
        "url_template": "https://api.example.com/items/{id}",
        "header_env": "{}",
        "system_field": "",
        "argv": "[]",
        "workdir": "scratch",
        "output_limit": "65536",
    }
    data.update(overrides)
    return data


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_the_form_offers_the_tools_own_always_or_never_safe_and_says_what_each_means(
    admin_client,
):
    page = text(admin_client.get(ADD))
    assert (
        '<option value="" selected>The tool\'s own</option>\n\n'
        '  <option value="True">Always safe (read-only)</option>\n\n'
        '  <option value="False">Never safe (treated as a write)</option>'
    ) in page
    assert "the workspace tool's list, read and search are safe, its edits are not" in page
    assert "Only safe calls run in read-only mode" in page


@pytest.mark.parametrize(("choice", "stored"), [("", None), ("True", True), ("False", False)])
def test_each_safety_choice_is_saved_and_listed(admin_client, choice, stored):
    response = admin_client.post(ADD, http_form(safe=choice, system_field="/meta/notes"))
    assert response.status_code == 302
    tool = Tool.objects.get(name="items")
    assert (tool.safe, tool.system_field) == (stored, "/meta/notes")
    label = dict(Tool.SAFETY_CHOICES)[stored]
    listed = text(admin_client.get(reverse("admin:agents_tool_changelist")))
    assert f'<td class="field-safe">{label}</td>' in listed


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"system_field": "notice"}, "Enter a JSON Pointer starting with /, such as /notice"),
        ({"system_field": "/a~2b"}, "In a JSON Pointer ~ is followed by 0 (for ~) or 1 (for /)."),
        (
            {"kind": "builtin", "url_template": "", "system_field": "/notice"},
            "Only HTTP tools take a system field.",
        ),
    ],
    ids=["no-slash", "bad-escape", "not-http"],
)
def test_the_form_explains_a_bad_system_field(admin_client, overrides, message):
    response = admin_client.post(ADD, http_form(**overrides))
    assert response.status_code == 200
    assert message in text(response)
    assert not Tool.objects.exists()
