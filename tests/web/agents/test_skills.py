"""Skills: instructions operators offer, activated for a conversation by the user (``/skill
name``) or by the model (the ``skills`` built-in), durably and idempotently."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from agents.models import AgentProfile, ApiKey, Instruction, ProviderEndpoint, Scope, Skill, Tool
from agents.runs import run_service
from agents.runtime.skills import UnknownSkill, activate_skills, list_skills
from conversations.models import Conversation, Message, Run
from tests.providers.turns import reply

from .test_consumers import connect, frames_until

SKILL_TEXT = "REVIEW-SKILL: check every claim twice."
SYSTEM = "You are the skills test agent."


@pytest.fixture
def reviewer(db) -> Skill:
    instruction = Instruction.objects.create(name="reviewer", content=SKILL_TEXT)
    return Skill.objects.create(instruction=instruction, description="For reviewing a draft.")


def skills_of(conversation: Conversation) -> list[str]:
    return Conversation.objects.get(pk=conversation.pk).skills


@pytest.mark.django_db
def test_activation_is_all_or_nothing_idempotent_and_names_the_offered_skills(
    user, conversation, reviewer
):
    key = str(conversation.pk)
    with pytest.raises(UnknownSkill) as refused:
        activate_skills(user.id, key, ["reviewer", "nope"])
    assert "'nope'" in str(refused.value) and "reviewer" in str(refused.value)
    assert skills_of(conversation) == []  # a lookup failure activates nothing
    first = activate_skills(user.id, key, ["reviewer"])
    assert (first.added, first.active, first.code) == (
        ("reviewer",),
        ("reviewer",),
        "skill_activated",
    )
    again = activate_skills(user.id, key, [" reviewer "])
    assert (again.added, again.code) == ((), "skill_active")
    assert skills_of(conversation) == ["reviewer"]
    assert list_skills(user.id, key) == [
        {"name": "reviewer", "description": "For reviewing a draft.", "active": True}
    ]


@pytest.mark.django_db
def test_only_what_the_profile_scope_lets_through_is_offered(user, conversation, reviewer, demo):
    demo.scope = Scope.objects.create(name="narrow", instructions=["house rules"])
    demo.save()
    assert list_skills(user.id, str(conversation.pk)) == []
    with pytest.raises(UnknownSkill, match="none are offered"):
        activate_skills(user.id, str(conversation.pk), ["reviewer"])


@pytest.mark.django_db
def test_operators_mark_an_instruction_as_a_skill_in_the_admin(client):
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    instruction = Instruction.objects.create(name="translator", content="Translate faithfully.")
    made = client.post(
        "/admin/agents/skill/add/",
        {"instruction": instruction.pk, "description": "For translating a text."},
    )
    assert made.status_code == 302
    assert Skill.objects.get().instruction == instruction
    listed = client.get("/admin/agents/skill/").content.decode()
    assert "translator" in listed and "For translating a text." in listed


@pytest.mark.django_db(transaction=True)
async def test_over_the_socket_skill_activates_once_and_an_unknown_name_is_refused(
    user, conversation, fast_demo, manager, reviewer
):
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "/skill reviewer", "nonce": "n1"})
    notice = (await frames_until(socket, "notice"))[-1]
    assert (notice["code"], notice["run"]) == ("skill_activated", None)
    assert "reviewer" in notice["message"]
    await socket.send_json_to({"type": "send", "content": "/skill reviewer", "nonce": "n2"})
    assert (await frames_until(socket, "notice"))[-1]["code"] == "skill_active"
    await socket.send_json_to({"type": "send", "content": "/skill nope", "nonce": "n3"})
    refused = (await frames_until(socket, "error"))[-1]
    assert refused["code"] == "unknown_skill" and "reviewer" in refused["message"]
    await socket.disconnect()
    assert await sync_to_async(skills_of)(conversation) == ["reviewer"]
    stored = await sync_to_async(Message.objects.filter(conversation=conversation).count)()
    runs = await sync_to_async(Run.objects.filter(conversation=conversation).count)()
    assert (stored, runs) == (0, 0)


@pytest.fixture
def stubbed(stub, user) -> Conversation:
    """A conversation of ``user`` on a profile whose model is the stub server, with the
    ``skills`` built-in."""
    endpoint = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(
        slug="skilled", name="Skilled", model=f"{endpoint.name}/m", system_prompt=SYSTEM
    )
    profile.tools.set([Tool.objects.get_or_create(name="skills", kind=Tool.Kind.BUILTIN)[0]])
    return Conversation.objects.create(owner=user, title="skills", profile=profile)


async def post(key: str, conversation: Conversation, content: str) -> dict:
    client = AsyncClient(authorization=f"Bearer {key}")
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": content},
        content_type="application/json",
    )
    raw = (
        b"".join([chunk async for chunk in response.streaming_content])
        if response.streaming
        else response.content
    )
    assert response.status_code == 200, raw
    return json.loads(raw)


def system_of(request) -> str:
    messages = request.json()["messages"]
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


@pytest.mark.django_db(transaction=True)
async def test_an_activated_skill_is_in_the_instructions_of_every_later_run(
    stub, stubbed, user, reviewer
):
    key = (await sync_to_async(ApiKey.objects.issue)(user=user, name="skills"))[1]
    stub.enqueue(reply("openai", ["one"]), reply("openai", ["two"]), reply("openai", ["three"]))
    await post(key, stubbed, "before")
    activated = await post(key, stubbed, "/skill reviewer")
    assert activated == {"skills": {"added": ["reviewer"], "active": ["reviewer"]}}
    refused = await AsyncClient(authorization=f"Bearer {key}").post(
        f"/api/conversations/{stubbed.pk}/messages/",
        {"content": "/skill nope"},
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert "'nope'" in refused.json()["errors"]["content"][0]
    await post(key, stubbed, "after")
    await post(key, stubbed, "and later")
    systems = [system_of(request) for request in stub.requests]
    assert SYSTEM in systems[0] and SKILL_TEXT not in systems[0]
    assert all(SKILL_TEXT in system for system in systems[1:]) and len(systems) == 3
    await run_service.manager.drain()


@pytest.mark.django_db(transaction=True)
async def test_the_model_lists_the_skills_and_activates_one_with_its_built_in_tool(
    stub, stubbed, user, reviewer
):
    key = (await sync_to_async(ApiKey.objects.issue)(user=user, name="skills"))[1]
    stub.enqueue(
        reply("openai", calls=[("c1", "skills", {})]),
        reply("openai", calls=[("c2", "skills", {"activate": ["reviewer"]})]),
        reply("openai", ["reviewed"]),
        reply("openai", ["again"]),
    )
    assert (await post(key, stubbed, "review my draft"))["status"] == "done"
    listed = stub.requests[1].json()["messages"][-1]
    assert listed["role"] == "tool" and "For reviewing a draft." in listed["content"]
    assert SKILL_TEXT not in system_of(stub.requests[1])
    # The run that activated it reads it in the tool's result; every later run in its prompt.
    loaded = stub.requests[2].json()["messages"][-1]
    assert (
        loaded["role"] == "tool"
        and SKILL_TEXT in json.loads(loaded["content"])["instructions"]["reviewer"]
    )
    await post(key, stubbed, "thanks")
    assert SKILL_TEXT in system_of(stub.requests[3])
    assert await sync_to_async(skills_of)(stubbed) == ["reviewer"]
    await run_service.manager.drain()
