"""Delegation: a job's ``delegate`` calls run child jobs on other profiles, two levels deep.

The three profiles (top → middle → leaf) share one loopback model server, which answers their
requests in the order the tree makes them (each parent waits for its child), with the usage
each turn reports: so what the budget has left at each level is known exactly.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async

from agents.jobs import JobRequest
from agents.jobs.delegation import register_delegate
from agents.models import AgentJob, AgentProfile, ProviderEndpoint, Tool
from agents.runtime.registry import ToolContext, ToolRegistry
from conversations.models import Conversation
from orkestrel.core import AgentContext
from tests.providers.server import Reply, StubServer
from tests.providers.turns import openai_turn

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = 1000
TIMEOUT = 120.0


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()


@sync_to_async
def tree(url: str) -> dict[str, AgentProfile]:
    """``top`` may delegate to ``middle``, ``middle`` to ``leaf``; all have the tool."""
    endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=url)
    tool, _ = Tool.objects.update_or_create(
        name="delegate", defaults={"kind": Tool.Kind.BUILTIN, "timeout": 60.0}
    )
    profiles = {}
    for slug in ("top", "middle", "leaf"):
        profile = AgentProfile.objects.create(
            slug=slug,
            name=slug,
            model=f"{endpoint.name}/m",
            token_budget=BUDGET if slug == "top" else None,
            timeout=TIMEOUT,
        )
        profile.tools.add(tool)
        profiles[slug] = profile
    profiles["top"].may_delegate_to.add(profiles["middle"])
    profiles["middle"].may_delegate_to.add(profiles["leaf"])
    return profiles


def delegate(call_id: str, profile: str, task: str, usage: tuple[int, int]) -> Reply:
    arguments = {"profile": profile, "task": task}
    return Reply(openai_turn(calls=[(call_id, "delegate", arguments)], usage=usage))


def answer(text: str, usage: tuple[int, int]) -> Reply:
    return Reply(openai_turn([text], usage=usage))


@sync_to_async
def family(top_id) -> tuple[AgentJob, AgentJob, AgentJob]:
    top = AgentJob.objects.get(pk=top_id)
    middle = AgentJob.objects.get(parent=top)
    return top, middle, AgentJob.objects.get(parent=middle)


async def test_a_tree_of_two_delegations_shares_the_top_jobs_budget_and_deadline(
    user, stub, services
):
    profiles = await tree(stub.url)
    stub.enqueue(
        delegate("c1", "middle", "ask the leaf", usage=(100, 20)),  # top: 120 used
        delegate("c2", "leaf", "say hello", usage=(200, 30)),  # middle: 230 used
        answer("hello from the leaf", usage=(50, 10)),
        answer("the leaf says hello", usage=(20, 5)),
        answer("all done", usage=(10, 5)),
    )
    service = services("process-a")
    request = JobRequest(profile=profiles["top"], messages=[{"role": "user", "content": "go"}])
    job = await service.enqueue(user_id=user.pk, request=request)
    done = await service.wait(str(job.pk))
    assert done.status == "done" and done.result["content"] == "all done"
    top, middle, leaf = await family(job.pk)
    assert (middle.depth, leaf.depth) == (1, 2)
    assert middle.status == leaf.status == "done"
    # Each child's budget is what its parent had left when it delegated.
    assert middle.job["budget"] == BUDGET - 120
    assert leaf.job["budget"] == BUDGET - 120 - 230
    # And its timeout what was left of its parent's.
    assert leaf.job["timeout"] <= middle.job["timeout"] <= TIMEOUT
    # The answers came back as the tool results, the leaf's through the middle.
    tool_messages = [
        [json.loads(m["content"]) for m in r.json()["messages"] if m["role"] == "tool"]
        for r in stub.requests
    ]
    assert tool_messages[3] == ["hello from the leaf"]
    assert tool_messages[4] == ["the leaf says hello"]
    assert stub.pending == 0


async def test_cancelling_the_top_job_cancels_its_child_and_grandchild(user, stub, services):
    profiles = await tree(stub.url)
    stub.enqueue(
        delegate("c1", "middle", "ask the leaf", usage=(10, 5)),
        delegate("c2", "leaf", "think for long", usage=(10, 5)),
        # The leaf's answer starts, then the model server holds it open.
        Reply(openai_turn(["thinking"], end=False), hold=True),
    )
    service = services("process-a")
    request = JobRequest(profile=profiles["top"], messages=[{"role": "user", "content": "go"}])
    job = await service.enqueue(user_id=user.pk, request=request)
    assert await asyncio.to_thread(stub.holding.wait, 20)
    await service.cancel(user_id=user.pk, job_id=str(job.pk))
    settled = await service.wait(str(job.pk))
    assert settled.status == "cancelled"
    top, middle, leaf = await family(job.pk)
    for child in (middle, leaf):
        settled_child = await service.wait(str(child.pk))
        assert settled_child.status == "cancelled"
    # The leaf's model call was stopped, not left to run.
    assert await asyncio.to_thread(stub.closed.wait, 10)


async def test_a_profile_it_may_not_delegate_to_is_refused(user, stub, services):
    profiles = await tree(stub.url)
    stub.enqueue(
        delegate("c1", "leaf", "skip the middle", usage=(10, 5)),
        answer("refused then", usage=(10, 5)),
    )
    service = services("process-a")
    request = JobRequest(profile=profiles["top"], messages=[{"role": "user", "content": "go"}])
    job = await service.enqueue(user_id=user.pk, request=request)
    done = await service.wait(str(job.pk))
    assert done.status == "done"
    tool = [m for m in stub.requests[1].json()["messages"] if m["role"] == "tool"]
    assert "not a profile this agent may delegate to" in tool[0]["content"]
    assert not await sync_to_async(AgentJob.objects.filter(parent=job.pk).exists)()


# -- a chat or API run delegating ----------------------------------------------------------


@sync_to_async
def chat_of(user, profile: AgentProfile) -> str:
    return str(Conversation.objects.create(owner=user, title="delegating", profile=profile).pk)


async def test_a_runs_delegate_call_answers_with_the_childs_result_and_links_its_job(
    user, stub, services
):
    profiles = await tree(stub.url)
    stub.enqueue(answer("the middle's answer", usage=(10, 5)))
    registry = ToolRegistry()
    register_delegate(services("process-a"), registry)
    context = ToolContext(user.pk, await chat_of(user, profiles["top"]), AgentContext())
    tool = registry.get("delegate").factory(context)
    answered = await tool.run({"profile": "middle", "task": "answer this"})
    assert answered["result"] == "the middle's answer"
    display = answered["display"]
    assert display["kind"] == "delegate" and display["status"] == "done"
    assert display["url"] == f"/api/jobs/{display['job']}/"
    child = await sync_to_async(AgentJob.objects.get)(pk=display["job"])
    assert (
        child.depth == 1 and child.parent_id is None and child.profile_id == profiles["middle"].pk
    )


async def test_a_run_stopped_mid_call_cancels_its_child(user, stub, services):
    profiles = await tree(stub.url)
    stub.enqueue(Reply(openai_turn(["thinking"], end=False), hold=True))
    service = services("process-a")
    registry = ToolRegistry()
    register_delegate(service, registry)
    context = ToolContext(user.pk, await chat_of(user, profiles["top"]), AgentContext())
    call = asyncio.ensure_future(
        registry.get("delegate").factory(context).run({"profile": "middle", "task": "go on"})
    )
    assert await asyncio.to_thread(stub.holding.wait, 20)
    # What the kit does to a running call when its run stops.
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    child = await sync_to_async(AgentJob.objects.get)(profile=profiles["middle"])
    assert (await service.wait(str(child.pk))).status == "cancelled"
    assert await asyncio.to_thread(stub.closed.wait, 10)
