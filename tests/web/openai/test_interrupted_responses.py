"""A stored response whose run's server process died reads ``incomplete`` with what the run
had saved, through the official ``openai`` SDK (never ``in_progress`` for ever)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.runs.interruptions import close_interrupted
from conversations.models import Conversation, Run
from conversations.responses import record_response

pytestmark = pytest.mark.django_db(transaction=True)


def _response_of_a_dead_run(owner, profile, response_id: str) -> Run:
    conversation = Conversation.objects.create(owner=owner, profile=profile, origin="responses")
    stale = timezone.now() - timedelta(minutes=5)
    run = Run.objects.create(
        conversation=conversation,
        status=Run.Status.RUNNING,
        content="The answer so f",
        started=stale,
        heartbeat=stale,
    )
    record_response(response_id, owner.pk, str(conversation.id), run.id, "upstream", True, {})
    return run


async def test_a_response_whose_process_died_is_incomplete_with_its_saved_text(
    sdk, alice, upstream
):
    await sync_to_async(_response_of_a_dead_run)(alice, upstream, "resp_dead1")
    await sync_to_async(close_interrupted)(60.0)
    fetched = await sdk().responses.retrieve("resp_dead1")
    assert fetched.status == "incomplete"
    assert fetched.output_text == "The answer so f"
    assert fetched.incomplete_details is not None
    assert fetched.incomplete_details.reason == "interrupted"


async def test_a_response_closed_by_an_earlier_release_is_incomplete_too(sdk, alice, upstream):
    run = await sync_to_async(_response_of_a_dead_run)(alice, upstream, "resp_dead2")
    # Closed without its finish stored (as releases before the finish frame did).
    await sync_to_async(Run.objects.filter(id=run.id).update)(
        status=Run.Status.INTERRUPTED, events=[]
    )
    fetched = await sdk().responses.retrieve("resp_dead2")
    assert (fetched.status, fetched.output_text) == ("incomplete", "The answer so f")
