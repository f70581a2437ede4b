"""``POST /api/jobs/`` holds the profile's caps: a job may lower its step limit, timeout and
token budget, never raise them; one above is a 400 naming the cap, and ``budget`` has a
maximum in the schema.

The profile's model is a loopback server whose every turn calls the ``workspace`` tool, so a
run goes on until a bound stops it: how many requests the model saw is how far it got.
"""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from agents.jobs import job_service
from agents.models import AgentJob, AgentProfile, ProviderEndpoint, Tool
from agents.runtime.caps import MAX_BUDGET
from tests.providers.server import Reply, StubServer
from tests.providers.turns import openai_turn

pytestmark = pytest.mark.django_db(transaction=True)

HELLO = [{"role": "user", "content": "look around"}]


@pytest.fixture(autouse=True)
async def stop_jobs():
    yield
    await job_service.shutdown()


@pytest.fixture
def tight(db, stub: StubServer) -> AgentProfile:
    """The finding's profile: a 2-step limit, a 20-token budget, a 60 s timeout."""
    endpoint = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=stub.url, max_retries=0
    )
    profile = AgentProfile.objects.create(
        slug="tight", name="tight", model=f"{endpoint.name}/m", limit=2, token_budget=20, timeout=60
    )
    profile.tools.set([Tool.objects.create(name="workspace", kind=Tool.Kind.BUILTIN)])
    return profile


def looking(stub: StubServer, turns: int, usage: tuple[int, int]) -> None:
    """``turns`` model turns, each calling the workspace tool and reporting ``usage``."""
    stub.enqueue(
        *(
            Reply(openai_turn(calls=[(f"c{n}", "workspace", {"operation": "list"})], usage=usage))
            for n in range(turns)
        )
    )


def test_asking_more_than_the_profiles_caps_is_a_400_naming_them(api, tight, stub):
    response = api.post(
        "/api/jobs/",
        {"profile": "tight", "messages": HELLO, "limit": 8, "budget": 120, "timeout": 61},
        format="json",
    )
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["code"] == "invalid"
    assert body["errors"] == {
        "limit": [
            "Ensure this value is less than or equal to 2: "
            "the step limit of the agent profile 'tight'."
        ],
        "timeout": [
            "Ensure this value is less than or equal to 60: "
            "the timeout (s) of the agent profile 'tight'."
        ],
        "budget": [
            "Ensure this value is less than or equal to 20: "
            "the token budget of the agent profile 'tight'."
        ],
    }
    assert not AgentJob.objects.exists() and not stub.requests


@pytest.mark.parametrize(
    "options",
    [{"limit": 3}, {"budget": 21}, {"timeout": 60.001}],
    ids=["limit", "budget", "timeout"],
)
def test_each_bound_is_capped_on_its_own(api, tight, options):
    response = api.post(
        "/api/jobs/", {"profile": "tight", "messages": HELLO, **options}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()["errors"]) == list(options)
    assert not AgentJob.objects.exists()


async def test_a_profile_without_a_token_budget_takes_any_budget_up_to_the_maximum(
    alice_key, tight, stub
):
    await AgentProfile.objects.filter(pk=tight.pk).aupdate(token_budget=None)
    looking(stub, 1, (1, 1))
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    body = {"profile": "tight", "messages": HELLO, "limit": 1, "allow_partial": True}
    over = await client.post(
        "/api/jobs/", {**body, "budget": MAX_BUDGET + 1}, content_type="application/json"
    )
    assert over.status_code == 400 and over.json()["errors"].keys() == {"budget"}
    response = await client.post(
        "/api/jobs/", {**body, "budget": MAX_BUDGET}, content_type="application/json"
    )
    assert response.status_code == 202 and response.json()["options"]["budget"] == MAX_BUDGET
    assert (await job_service.wait(response.json()["id"])).status == "partial"


@pytest.mark.parametrize(
    ("options", "usage"),
    [
        # Each turn's 2 tokens are far under any budget: the step limit of 1 ends it.
        ({"limit": 1}, (1, 1)),
        # 12 tokens: over the job's budget of 10 at once, under the profile's 20.
        ({"budget": 10}, (6, 6)),
    ],
    ids=["limit", "budget"],
)
async def test_a_job_that_asks_less_runs_with_less(alice_key, tight, stub, options, usage):
    looking(stub, 2, usage)
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.post(
        "/api/jobs/",
        {"profile": "tight", "messages": HELLO, "allow_partial": True, **options},
        content_type="application/json",
    )
    assert response.status_code == 202, response.json()
    assert {k: response.json()["options"][k] for k in options} == options
    job = await job_service.wait(response.json()["id"])
    assert job.status == "partial"
    # One turn, not the profile's two.
    assert len(stub.requests) == 1


def test_the_schema_gives_budget_its_maximum():
    generated = SchemaGenerator().get_schema(request=None, public=True)
    schema = json.loads(OpenApiJsonRenderer().render(generated))
    create = schema["paths"]["/api/jobs/"]["post"]["requestBody"]["content"]["application/json"]
    ref = create["schema"]["$ref"].rsplit("/", 1)[1]
    budget = schema["components"]["schemas"][ref]["properties"]["budget"]
    assert budget["maximum"] == MAX_BUDGET == 2**31 - 1
    assert budget["minimum"] == 1
    assert "at most the profile's token budget" in budget["description"]
