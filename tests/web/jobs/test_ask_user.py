"""A job has nobody to answer the model's ``ask_user``: the call is refused in words the model
reads, nothing waits, and the job goes on to its answer."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.jobs import JobRequest
from agents.models import AgentProfile, ProviderEndpoint, Tool
from agents.runtime.builtins.ask_user import REFUSAL
from conversations.models import Question
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def asking_profile(url: str) -> AgentProfile:
    endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=url)
    profile = AgentProfile.objects.create(slug="asker", name="asker", model=f"{endpoint.name}/m")
    profile.tools.add(Tool.objects.create(name="ask_user", kind=Tool.Kind.BUILTIN))
    return profile


async def test_a_jobs_question_is_refused_and_the_job_goes_on(user, stub, services):
    stub.enqueue(
        reply("openai", calls=[("q1", "ask_user", {"question": "Which colour?"})]),
        reply("openai", ["Blue, as nobody could say."]),
    )
    profile = await asking_profile(stub.url)
    service = services("process-a")
    request = JobRequest(profile=profile, messages=[{"role": "user", "content": "paint"}])
    job = await service.enqueue(user_id=user.pk, request=request)
    done = await service.wait(str(job.pk))
    assert (done.status, done.result["content"]) == ("done", "Blue, as nobody could say.")
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(tool["content"]) == {"answer": None, "refused": REFUSAL}
    assert await sync_to_async(Question.objects.count)() == 0
