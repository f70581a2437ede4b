"""``/v1`` keeps the profile's token budget: a request's ``max_tokens`` (or
``max_output_tokens``) is a completion cap beside it, whichever runs out first, so however large
it is the profile's budget still ends the run. ``/v1`` takes no step limit or timeout."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile
from conversations.models import Run
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

TALK = ["word " * 8] * 10


@pytest.fixture
def budgeted(upstream: AgentProfile) -> AgentProfile:
    """The upstream profile with a 5-token budget."""
    AgentProfile.objects.filter(pk=upstream.pk).update(token_budget=5)
    return upstream


async def test_a_large_max_tokens_does_not_lift_the_profiles_budget(sdk, budgeted, stub, alice):
    stub.enqueue(reply("openai", TALK))
    completion = await sdk().chat.completions.create(
        model="upstream", messages=[{"role": "user", "content": "talk"}], max_tokens=100_000
    )
    assert completion.choices[0].finish_reason == "length"
    run = await sync_to_async(Run.objects.get)(conversation__owner=alice)
    assert run.request["max_tokens"] == 100_000 and run.stop_reason == "abort"


async def test_a_large_max_output_tokens_does_not_lift_the_profiles_budget(sdk, budgeted, stub):
    stub.enqueue(reply("openai", TALK))
    made = await sdk().responses.create(model="upstream", input="talk", max_output_tokens=100_000)
    assert made.status == "incomplete"
    assert made.incomplete_details is not None
    assert made.incomplete_details.reason == "max_output_tokens"
