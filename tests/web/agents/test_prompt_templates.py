"""Operators' prompt templates: ``/name text`` expands just before the run, through the socket
and the REST API alike; the chat page lists them for the composer; the admin manages them."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import AsyncClient

from agents.models import ApiKey, PromptTemplate
from agents.models.prompts import expand
from agents.runs import run_service
from agents.runs.commands import Compact, Continue, LoadSkill, Say, interpret
from conversations.models import Message

from .test_consumers import connect, frames_until

TEMPLATES = {
    "summarize": "Summarize this:\n\n{{input}}",
    "hello": "Say hello.",
    "echo": "{{input}}",
}


def lookup(name: str, rest: str) -> str | None:
    template = TEMPLATES.get(name)
    return None if template is None else expand(template, rest)


@pytest.mark.parametrize(
    ("template", "rest", "sent"),
    [
        ("Summarize: {{input}}", "the notes", "Summarize: the notes"),
        ("{{input}} and again {{input}}", "x", "x and again x"),
        ("Say hello.", "and wave", "Say hello.\n\nand wave"),
        ("Say hello.  ", "", "Say hello."),
        ("Translate: {{input}}", "", "Translate:"),
    ],
)
def test_the_trailing_text_goes_in_the_placeholder_or_after_the_text(template, rest, sent):
    assert expand(template, rest) == sent


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/summarize the meeting notes", Say("Summarize this:\n\nthe meeting notes")),
        ("  /hello   and wave ", Say("Say hello.\n\nand wave")),
        ("/summarize\nline one\nline two", Say("Summarize this:\n\nline one\nline two")),
        ("//summarize the notes", Say("/summarize the notes")),
        ("/unknown words", Say("/unknown words")),
        ("/path/to/file", Say("/path/to/file")),
        ("/echo", Continue()),
        ("/compact later", Compact("later")),
        ("/continue", Continue()),
        ("/skill  code review ", LoadSkill("code review")),
    ],
)
def test_a_template_expands_and_the_built_in_commands_stay_first(text, command):
    assert interpret(text, expand=lookup) == command


def test_a_message_with_images_still_expands_its_template():
    assert interpret("/hello", images=True, expand=lookup) == Say("Say hello.")
    assert interpret("/skill x", images=True, expand=lookup) == Say("/skill x")


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["compact", "Continue", "skill", "two words", "a/b"])
def test_a_template_cannot_take_a_command_name_or_a_name_that_is_not_a_slug(name):
    with pytest.raises(ValidationError) as raised:
        PromptTemplate(name=name, text="x").full_clean()
    assert "name" in raised.value.message_dict


def user_contents(conversation) -> list[str]:
    rows = Message.objects.filter(conversation=conversation, role="user").order_by("position")
    return list(rows.values_list("content", flat=True))


@pytest.mark.django_db(transaction=True)
async def test_over_the_socket_the_stored_message_is_the_expanded_text(
    user, conversation, fast_demo, manager
):
    await sync_to_async(PromptTemplate.objects.create)(
        name="summarize", text="Summarize: {{input}}"
    )
    await sync_to_async(PromptTemplate.objects.create)(name="off", text="never", enabled=False)
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "/summarize the notes", "nonce": "n1"})
    frames = await frames_until(socket, "finish")
    assert frames[0]["nonce"] == "n1"
    assert frames[0]["message"]["content"] == "Summarize: the notes"
    # A disabled template is no template: the text is sent as typed.
    await socket.send_json_to({"type": "send", "content": "/off please", "nonce": "n2"})
    frames = await frames_until(socket, "finish")
    assert frames[0]["message"]["content"] == "/off please"
    await socket.disconnect()
    assert await sync_to_async(user_contents)(conversation) == [
        "Summarize: the notes",
        "/off please",
    ]


@pytest.mark.django_db(transaction=True)
async def test_over_rest_a_template_expands_and_a_double_slash_sends_it_literally(
    user, conversation, fast_demo
):
    await sync_to_async(PromptTemplate.objects.create)(name="brief", text="Answer in one line.")
    key = (await sync_to_async(ApiKey.objects.issue)(user=user, name="templates"))[1]
    client = AsyncClient(authorization=f"Bearer {key}")
    url = f"/api/conversations/{conversation.pk}/messages/?wait=true"
    for content in ("/brief why is the sky blue", "//brief is a template"):
        response = await client.post(url, {"content": content}, content_type="application/json")
        assert response.status_code == 200
    assert await sync_to_async(user_contents)(conversation) == [
        "Answer in one line.\n\nwhy is the sky blue",
        "/brief is a template",
    ]
    await run_service.manager.drain()


@pytest.mark.django_db
def test_the_chat_page_lists_the_enabled_templates_for_the_composer(client, user, conversation):
    PromptTemplate.objects.create(name="summarize", description="Sum up the text", text="x")
    PromptTemplate.objects.create(name="hidden", description="off", text="x", enabled=False)
    client.force_login(user)
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    embedded = re.search(
        r'<script id="prompt-templates" type="application/json">(.*?)</script>', page
    )
    assert embedded is not None
    assert json.loads(embedded.group(1)) == [
        {"name": "summarize", "description": "Sum up the text"}
    ]


@pytest.mark.django_db
def test_the_admin_says_what_the_placeholder_does_and_refuses_a_command_name(client):
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    add = "/admin/agents/prompttemplate/add/"
    assert "{{input}}" in client.get(add).content.decode()
    refused = client.post(add, {"name": "compact", "text": "x", "enabled": "on"})
    assert refused.status_code == 200 and "built-in command" in refused.content.decode()
    made = client.post(
        add, {"name": "review", "description": "Review it", "text": "Review: {{input}}"}
    )
    assert made.status_code == 302
    assert PromptTemplate.objects.get(name="review").expand("this") == "Review: this"
