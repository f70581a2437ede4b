"""A job runs within its profile's caps whatever it was stored with, and a delegated child
within its own profile's, whatever its parent had left (``agents.runtime.caps``).

The finding: a profile with a 20-token budget and a 2-step limit ran 8 steps and 120 tokens
because its job asked so. Its model here is a loopback server whose every turn calls the
``workspace`` tool, so a run goes on until a bound stops it.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.jobs import JobRequest, ProfileRegistry
from agents.jobs.delegation import Parent, child_request
from agents.jobs.records import JobSpec, create_job, start_job
from agents.models import AgentProfile, ProviderEndpoint, Tool
from agents.runtime.builtins.delegate import Delegation
from orkestrel.core import TokenBudget
from tests.providers.server import Reply, StubServer
from tests.providers.turns import openai_turn

from .conftest import scripted_profile

pytestmark = pytest.mark.django_db(transaction=True)

GO = [{"role": "user", "content": "look around"}]


def tight_profile(url: str) -> AgentProfile:
    """The finding's profile: a 2-step limit, a 20-token budget, a 60 s timeout."""
    endpoint = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=url, max_retries=0
    )
    profile = AgentProfile.objects.create(
        slug="tight", name="tight", model=f"{endpoint.name}/m", limit=2, token_budget=20, timeout=60
    )
    profile.tools.set([Tool.objects.create(name="workspace", kind=Tool.Kind.BUILTIN)])
    return profile


def spec_for(user, profile, **job) -> JobSpec:
    row = create_job(
        user_id=user.pk,
        profile=profile,
        job={"provider": profile.slug, "messages": GO, **job},
        retries=0,
        allow_partial=True,
        owner="process-a",
    )
    spec = start_job(str(row.pk), "process-a")
    assert isinstance(spec, JobSpec)
    return spec


def test_a_stored_job_above_its_profiles_caps_is_built_within_them(user, demo):
    # A row stored before the door checked, or whose profile an operator tightened since.
    profile = scripted_profile("tight", limit=2, token_budget=20, timeout=60.0)
    spec = spec_for(user, profile, limit=8, timeout=600.0, budget=120)
    agent = ProfileRegistry(spec).build(spec.record.job)
    assert (agent.limit, agent.timeout) == (2, 60.0)
    assert isinstance(agent.budget, TokenBudget) and agent.budget.max == 20
    # What is under the caps stays as the job asked; a budget of 0 does not drop the profile's.
    lower = spec_for(user, profile, limit=1, timeout=5.0, budget=0)
    agent = ProfileRegistry(lower).build(lower.record.job)
    assert (agent.limit, agent.timeout) == (1, 5.0)
    assert isinstance(agent.budget, TokenBudget) and agent.budget.max == 20


async def test_the_findings_job_stops_at_the_profiles_two_steps_and_twenty_tokens(
    user, stub: StubServer, services
):
    profile = await sync_to_async(tight_profile)(stub.url)
    # Eight turns of 15 tokens: what the job asked for (8 steps, 120 tokens) would take them all.
    stub.enqueue(
        *(
            Reply(openai_turn(calls=[(f"c{n}", "workspace", {"operation": "list"})], usage=(5, 10)))
            for n in range(8)
        )
    )
    service = services("process-a")
    request = JobRequest(profile=profile, messages=GO, limit=8, budget=120, allow_partial=True)
    job = await service.enqueue(user_id=user.pk, request=request)
    done = await service.wait(str(job.pk))
    assert done.status == "partial"
    assert len(stub.requests) == 2
    assert done.result["usage"]["total"] == 30


@pytest.fixture
def family(demo) -> dict[str, AgentProfile]:
    """``top`` may delegate to ``capped`` (a 50-token budget, 30 s) and ``open`` (no budget)."""
    top = scripted_profile("top", token_budget=1000, timeout=120.0)
    capped = scripted_profile("capped", token_budget=50, timeout=30.0)
    unbudgeted = scripted_profile("open", timeout=300.0)
    top.may_delegate_to.add(capped, unbudgeted)
    return {"top": top, "capped": capped, "open": unbudgeted}


def asked(profile: str, budget: int | None, timeout: float | None) -> Delegation:
    return Delegation(profile=profile, task="do it", budget=budget, timeout=timeout)


def test_a_child_gets_no_more_than_its_own_profiles_caps(user, family):
    parent = Parent(user_id=user.pk, profile_id=family["top"].pk, job_id=None)
    # The parent has 880 tokens and 100 s left; the child's profile allows 50 and 30.
    request = child_request(parent, asked("capped", 880, 100.0))
    assert (request.budget, request.timeout) == (50, 30.0)
    # Less than the child's caps: what the parent has left.
    request = child_request(parent, asked("capped", 10, 5.0))
    assert (request.budget, request.timeout) == (10, 5.0)
    # A child profile without a budget is bounded by the parent's leftovers alone.
    request = child_request(parent, asked("open", 880, 100.0))
    assert (request.budget, request.timeout) == (880, 100.0)
    # A parent without bounds leaves the child's profile to decide.
    request = child_request(parent, asked("capped", None, None))
    assert (request.budget, request.timeout) == (None, None)
