"""The kit's registry over a job's profile: the agent a job runs is built as a chat run's is."""

from __future__ import annotations

import pytest

from agents.authority import PolicyAuthority
from agents.jobs import ProfileRegistry
from agents.jobs.records import JobSpec, create_job, start_job
from agents.models import AuthorityPolicy, Instruction, Scope

from .conftest import scripted_profile

pytestmark = pytest.mark.django_db


def spec_for(user, profile, **job) -> JobSpec:
    row = create_job(
        user_id=user.pk,
        profile=profile,
        job={
            "provider": profile.slug,
            "messages": [{"role": "user", "content": "hi"}],
            **job,
        },
        retries=0,
        allow_partial=False,
        owner="process-a",
    )
    spec = start_job(str(row.pk), "process-a")
    assert isinstance(spec, JobSpec)
    return spec


@pytest.fixture
def equipped(demo):
    """A profile with everything a chat run uses: prompt, policy, scope, instructions, tools."""
    profile = scripted_profile(
        "equipped",
        system_prompt="You are careful.",
        limit=7,
        timeout=42.0,
        token_budget=900,
        authority_policy=AuthorityPolicy.objects.create(name="guard"),
        scope=Scope.objects.create(name="narrow", tools=["workspace"]),
    )
    profile.instructions.add(Instruction.objects.create(name="tone", content="Be brief."))
    profile.tools.set(demo.tools.all())
    return profile


def test_the_agent_has_the_profiles_provider_authority_scope_instructions_and_tools(
    user, demo, equipped
):
    spec = spec_for(user, equipped)
    agent = ProfileRegistry(spec).build(spec.record.job)
    context = agent.context
    assert agent.provider is not None and agent.provider.name == "demo/echo"
    assert isinstance(agent.authority, PolicyAuthority)
    assert agent.authority.policy == equipped.authority_policy
    assert context.scope is not None and context.scope.tools == ("workspace",)
    assert [i.name for i in context.instructions.instructions()] == ["tone"]
    assert {t.name for t in context.tools.tools()} == set(
        equipped.tools.filter(enabled=True).values_list("name", flat=True)
    )
    assert context.workspaces.active is not None
    assert context.workspaces.active.id == spec.record.id
    assert [(m.role, m.content) for m in context.messages.messages()] == [("user", "hi")]


def test_the_profiles_bounds_apply_unless_the_job_sets_its_own(user, demo, equipped):
    defaults = spec_for(user, equipped)
    agent = ProfileRegistry(defaults).build(defaults.record.job)
    assert (agent.limit, agent.timeout) == (7, 42.0)
    assert agent.budget is not None
    assert agent.context.system == "You are careful."
    own = spec_for(user, equipped, limit=2, timeout=5.0, budget=10, system="Answer in French.")
    agent = ProfileRegistry(own).build(own.record.job)
    assert (agent.limit, agent.timeout) == (2, 5.0)
    assert agent.context.system == "You are careful.\n\nAnswer in French."


def test_a_job_cannot_drop_or_swap_the_profiles_authority(user, demo, equipped):
    spec = spec_for(user, equipped, authority="")
    registry = ProfileRegistry(spec)
    assert registry.resolve({**spec.record.job, "authority": "other"})["authority"] == "equipped"
    assert isinstance(registry.build(spec.record.job).authority, PolicyAuthority)
    plain = spec_for(user, demo)
    assert "authority" not in ProfileRegistry(plain).resolve(plain.record.job)
