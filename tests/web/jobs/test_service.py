"""The job service: jobs run with their profile, retry, settle, cancel, and survive restarts.

Each ``JobService`` plays one server process (its ``owner``); a row whose heartbeat is old
plays a job a dead process left.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.jobs import JobRequest, JobSettled, job_service, restore_jobs
from agents.models import AgentJob, AuthorityPolicy, AuthorityRule, ProviderEndpoint

from .conftest import scripted_profile, until_running

pytestmark = pytest.mark.django_db(transaction=True)


def ask(profile, content: str = "hello jobs", **options) -> JobRequest:
    return JobRequest(profile=profile, messages=[{"role": "user", "content": content}], **options)


@sync_to_async
def row(job_id) -> AgentJob:
    return AgentJob.objects.get(pk=job_id)


async def test_a_job_runs_to_its_result_with_the_demo_profile(user, demo, services):
    service = services("process-a")
    queued = await service.enqueue(user_id=user.pk, request=ask(demo))
    assert queued.status == "queued" and queued.owner == "process-a"
    done = await service.wait(str(queued.pk))
    assert done.status == "done" and done.attempts == 1
    assert done.result["content"].startswith("You said: hello jobs")
    assert done.result["stop"] == "done" and done.result["partial"] is False
    assert done.result["usage"]["total"] > 0
    assert done.started is not None and done.finished >= done.started
    assert done.error == "" and done.error_code == ""


async def test_the_profiles_tools_are_bound_to_the_jobs_own_agent(user, demo, services):
    """The demo model calls the ``workspace`` tool when asked about files; it answers from
    the job's scratch workspace."""
    service = services("process-a")
    job = await service.enqueue(user_id=user.pk, request=ask(demo, "which files are there?"))
    done = await service.wait(str(job.pk))
    assert done.status == "done"
    assert done.result["content"].startswith("The workspace tool answered:")


async def test_the_profiles_authority_gates_the_jobs_tool_calls(user, demo, services):
    @sync_to_async
    def guarded():
        policy = AuthorityPolicy.objects.create(name="no-files")
        AuthorityRule.objects.create(
            policy=policy, position=0, tool_glob="workspace", reason="not for jobs"
        )
        profile = scripted_profile("guarded", authority_policy=policy)
        profile.tools.set(demo.tools.all())
        return profile

    profile = await guarded()
    service = services("process-a")
    job = await service.enqueue(user_id=user.pk, request=ask(profile, "which files are there?"))
    done = await service.wait(str(job.pk))
    assert done.status == "done"
    assert "not for jobs" in done.result["content"]


async def test_exhausting_the_limit_is_an_error_unless_partial_is_allowed(user, demo, services):
    service = services("process-a")
    strict = await service.enqueue(user_id=user.pk, request=ask(demo, "list files", limit=1))
    lenient = await service.enqueue(
        user_id=user.pk, request=ask(demo, "list files", limit=1, allow_partial=True)
    )
    failed, partial = await service.wait(str(strict.pk)), await service.wait(str(lenient.pk))
    assert failed.status == "error" and failed.error_code == "partial"
    assert failed.result["stop"] == "exhaust" and failed.result["partial"] is True
    assert partial.status == "partial" and partial.result["stop"] == "exhaust"
    assert partial.error_code == ""


async def test_a_failing_provider_is_retried_then_the_job_errors(user, demo, services):
    @sync_to_async
    def unreachable():
        # Nothing listens on port 9 (discard): every call fails at connect, at once.
        ProviderEndpoint.objects.create(
            name="down", kind="openai", base_url="http://127.0.0.1:9/v1", max_retries=0
        )
        return scripted_profile("down-profile", model="down/gpt")

    profile = await unreachable()
    service = services("process-a")
    job = await service.enqueue(user_id=user.pk, request=ask(profile, retries=2))
    done = await service.wait(str(job.pk))
    assert done.status == "error" and done.attempts == 3
    assert done.error_code and done.error
    assert done.result is None


async def test_a_profile_disabled_before_the_job_starts_fails_it(user, demo, services):
    service = services("process-a", concurrency=1)
    first = await service.enqueue(user_id=user.pk, request=ask(demo))
    second = await service.enqueue(user_id=user.pk, request=ask(demo))
    await sync_to_async(type(demo).objects.filter(pk=demo.pk).update)(enabled=False)
    await service.wait(str(first.pk))
    done = await service.wait(str(second.pk))
    assert done.status == "error" and done.error_code == "profile_unavailable"


# -- cancelling ------------------------------------------------------------------------------


async def test_cancelling_a_queued_job_settles_it_at_once(user, slow, services):
    service = services("process-a", concurrency=1)
    running = await service.enqueue(user_id=user.pk, request=ask(slow))
    waiting = await service.enqueue(user_id=user.pk, request=ask(slow))
    await until_running(running.pk)
    cancelled = await service.cancel(user_id=user.pk, job_id=str(waiting.pk))
    assert cancelled.status == "cancelled" and cancelled.finished is not None
    await service.cancel(user_id=user.pk, job_id=str(running.pk))
    assert (await service.wait(str(running.pk))).status == "cancelled"
    assert (await service.wait(str(waiting.pk))).attempts == 0


async def test_cancelling_a_running_job_keeps_its_partial_answer(user, slow, services):
    service = services("process-a")
    job = await service.enqueue(user_id=user.pk, request=ask(slow))
    await until_running(job.pk)
    answer = await service.cancel(user_id=user.pk, job_id=str(job.pk))
    assert answer.status == "running" and answer.cancel_requested
    done = await service.wait(str(job.pk))
    assert done.status == "cancelled" and done.attempts == 1
    assert done.result["stop"] == "abort" and done.result["partial"] is True
    assert done.error == ""


async def test_a_cancel_through_another_process_reaches_the_holder(user, slow, services):
    holder, other = services("process-a"), services("process-b")
    job = await holder.enqueue(user_id=user.pk, request=ask(slow))
    await until_running(job.pk)
    answer = await other.cancel(user_id=user.pk, job_id=str(job.pk))
    assert answer.cancel_requested
    done = await holder.wait(str(job.pk))
    assert done.status == "cancelled" and done.owner == "process-a"


async def test_a_settled_job_cannot_be_cancelled_and_another_users_is_absent(
    user, other, demo, services
):
    service = services("process-a")
    job = await service.enqueue(user_id=user.pk, request=ask(demo))
    await service.wait(str(job.pk))
    with pytest.raises(JobSettled):
        await service.cancel(user_id=user.pk, job_id=str(job.pk))
    with pytest.raises(LookupError):
        await service.cancel(user_id=other.pk, job_id=str(job.pk))
    with pytest.raises(LookupError):
        await service.get(user_id=other.pk, job_id=str(job.pk))
    with pytest.raises(LookupError):
        await service.get(user_id=user.pk, job_id="not-a-job")


# -- restarts --------------------------------------------------------------------------------


async def test_restore_jobs_completes_a_job_a_dead_process_left_running(
    user, demo, left_by, services
):
    orphan = await sync_to_async(left_by)("dead-process", user, demo, content="survive me")
    started = await restore_jobs()
    assert started == [str(orphan.pk)]
    done = await job_service.wait(str(orphan.pk))
    assert done.status == "done" and done.owner == job_service.owner
    assert done.result["content"].startswith("You said: survive me")
    # The interrupted attempt counts: this is the second.
    assert done.attempts == 2
    assert done.started == orphan.started


async def test_a_queued_job_of_a_dead_process_is_run_and_a_cancelled_one_is_not(
    user, demo, left_by, services
):
    queued = await sync_to_async(left_by)("dead-process", user, demo, status="queued")
    cancelled = await sync_to_async(left_by)("dead-process", user, demo, cancel_requested=True)
    service = services("process-a")
    assert await service.restore() == [str(queued.pk)]
    assert (await service.wait(str(queued.pk))).status == "done"
    gone = await row(cancelled.pk)
    assert gone.status == "cancelled" and gone.attempts == 1 and gone.result is None


async def test_a_live_processs_job_is_never_taken_over(user, slow, services):
    holder, newcomer = services("process-a"), services("process-b")
    job = await holder.enqueue(user_id=user.pk, request=ask(slow))
    assert await newcomer.restore() == []
    done = await holder.wait(str(job.pk))
    assert done.status == "done" and done.owner == "process-a" and done.attempts == 1


async def test_a_job_whose_holder_stops_beating_is_taken_over_once_stale(
    user, demo, left_by, services
):
    """A server restarted quickly sees its predecessor's heartbeat still fresh: it leaves the
    job alone, then takes it over once the heartbeat is stale (time is the contract here)."""
    fresh = await sync_to_async(left_by)("just-died", user, demo, age=0.0)
    service = services("process-b", stale=0.5)
    assert await service.recover() == []
    assert (await row(fresh.pk)).owner == "just-died"
    done = await service.wait(str(fresh.pk))
    assert done.status == "done" and done.owner == "process-b"


async def test_a_job_left_running_whose_heartbeat_is_fresh_is_not_run_twice(
    user, demo, left_by, services
):
    alive = await sync_to_async(left_by)("process-a", user, demo, age=0.0)
    service = services("process-b", stale=60.0)
    assert await service.restore() == []
    untouched = await row(alive.pk)
    assert untouched.status == "running" and untouched.owner == "process-a"
    assert untouched.heartbeat == alive.heartbeat


async def test_the_first_use_of_the_service_restores_orphans(user, demo, left_by, services):
    orphan = await sync_to_async(left_by)("dead-process", user, demo)
    service = services("process-a")
    await service.get(user_id=user.pk, job_id=str(orphan.pk))
    done = await service.wait(str(orphan.pk))
    assert done.status == "done" and done.owner == "process-a"


async def test_a_holder_that_lost_its_job_cannot_settle_it(user, slow, services):
    """A job taken over (its holder's heartbeat was stale) is written by its new holder only."""
    holder = services("process-a", heartbeat=60.0, stale=60.0)
    job = await holder.enqueue(user_id=user.pk, request=ask(slow))
    await until_running(job.pk)
    stale = timezone.now() - timedelta(seconds=120)
    await sync_to_async(AgentJob.objects.filter(pk=job.pk).update)(heartbeat=stale)
    newcomer = services("process-b", stale=60.0)
    assert await newcomer.restore() == [str(job.pk)]
    done = await newcomer.wait(str(job.pk))
    await holder.wait(str(job.pk))
    assert done.owner == "process-b" and done.status == "done"
    assert (await row(job.pk)).owner == "process-b"
