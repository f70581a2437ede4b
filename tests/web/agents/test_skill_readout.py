"""Which skills are active is shown where people look: the ``state`` frame's conversation, and a
``skills`` frame to every tab the moment one activates (by ``/skill`` or by the model)."""

from __future__ import annotations

import pytest

from agents.models import AgentProfile, Instruction, ProviderEndpoint, Skill, Tool
from conversations.models import Conversation
from tests.providers.turns import reply

from .test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reviewer(db) -> Skill:
    instruction = Instruction.objects.create(name="reviewer", content="Check every claim twice.")
    return Skill.objects.create(instruction=instruction, description="For reviewing a draft.")


async def test_a_skill_command_shows_in_every_tab_and_in_the_state_after(
    user, conversation, fast_demo, manager, reviewer
):
    first, state = await connect(user, conversation)
    assert state["conversation"]["skills"] == []
    second, _ = await connect(user, conversation)
    await first.send_json_to({"type": "send", "content": "/skill reviewer"})
    for socket in (first, second):
        frame = (await frames_until(socket, "skills"))[-1]
        assert frame == {"type": "skills", "run": None, "seq": None, "skills": ["reviewer"]}
    # Asked again: nothing changes, so no skills frame; the notice says so.
    await first.send_json_to({"type": "send", "content": "/skill reviewer", "nonce": "again"})
    kinds = [frame["type"] for frame in await frames_until(first, "notice")]
    assert "skills" not in kinds
    await first.disconnect()
    await second.disconnect()
    _, reloaded = await connect(user, conversation)
    assert reloaded["conversation"]["skills"] == ["reviewer"]


@pytest.fixture
def skilled(stub, user) -> Conversation:
    endpoint = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="skilled", name="Skilled", model="stub/m")
    profile.tools.set([Tool.objects.get_or_create(name="skills", kind=Tool.Kind.BUILTIN)[0]])
    assert profile.endpoint_name == endpoint.name
    return Conversation.objects.create(owner=user, title="skills", profile=profile)


async def test_the_model_activating_a_skill_updates_the_tabs_during_the_run(
    stub, skilled, user, manager, reviewer
):
    stub.enqueue(
        reply("openai", calls=[("c1", "skills", {"activate": ["reviewer"]})]),
        reply("openai", ["reviewed"]),
    )
    socket, _ = await connect(user, skilled)
    await socket.send_json_to({"type": "send", "content": "review my draft"})
    frames = await frames_until(socket, "finish")
    kinds = [frame["type"] for frame in frames]
    announced = frames[kinds.index("skills")]
    assert announced["skills"] == ["reviewer"]
    # Announced once the activating call's result is in, before the answer that follows.
    assert kinds.index("tool") < kinds.index("skills") < kinds.index("finish")
    await socket.disconnect()
