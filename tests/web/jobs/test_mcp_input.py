"""A job has nobody to ask: an MCP server's request for the user's input (a real SDK server in a
subprocess, over Streamable HTTP) is declined at once, and the job goes on to its answer."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.jobs import JobRequest
from agents.models import AgentProfile, McpServer, ProviderEndpoint
from tests.mcp_input_fixtures import asking  # noqa: F401 - a fixture
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def booking_profile(model_url: str, server_url: str) -> AgentProfile:
    endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=model_url)
    profile = AgentProfile.objects.create(slug="booker", name="booker", model=f"{endpoint.name}/m")
    McpServer.objects.create(name="asking", url=server_url).profiles.add(profile)
    return profile


async def test_a_servers_request_for_input_in_a_job_is_declined_and_the_job_goes_on(
    user,
    stub,
    services,
    asking,  # noqa: F811 - a fixture
):
    stub.enqueue(
        reply("openai", calls=[("c1", "asking__book_table", {"restaurant": "Chez Ada"})]),
        reply("openai", ["Nobody could choose; no table."]),
    )
    profile = await booking_profile(stub.url, asking.url)
    service = services("process-a")
    request = JobRequest(profile=profile, messages=[{"role": "user", "content": "book"}])
    job = await service.enqueue(user_id=user.pk, request=request)
    done = await service.wait(str(job.pk))
    assert (done.status, done.result["content"]) == ("done", "Nobody could choose; no table.")
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert json.loads(tool["content"]) == {"result": "booking declined"}
